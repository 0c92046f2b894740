"""Typed store errors: each names the file or thread and says what to do."""

from __future__ import annotations

from .._errors import AwakenError
from ..suspension._suspension import ThreadBusy

__all__ = [
    "ConfigNotFound",
    "DuplicateMessageId",
    "InvalidCommit",
    "LeaseLost",
    "RunRecordError",
    "StoreCorrupt",
    "StoreError",
    "StoreIOError",
    "StoreSchemaError",
    "UnmatchedToolResult",
]


class StoreError(AwakenError):
    """Base class of every error a store backend raises (besides ``VersionConflict``)."""


class StoreCorrupt(StoreError):
    """A store file or database cannot be read: it is damaged or not a store."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(
            f"store file {path!r} is corrupt: {detail}; restore it from a backup, or move it "
            f"away to start with an empty store"
        )


class StoreSchemaError(StoreError):
    """A database was written by a newer (or unknown) schema version."""

    def __init__(self, path: str, found: int, supported: int) -> None:
        self.path = path
        self.found = found
        self.supported = supported
        super().__init__(
            f"store {path!r} has schema version {found}, but this awaken-runtime supports up "
            f"to {supported}; upgrade awaken-runtime to open it (it is never downgraded)"
        )


class StoreIOError(StoreError):
    """The operating system refused a read or write (disk full, permissions, ...).

    Nothing of the failed operation was committed.
    """

    def __init__(self, path: str, action: str, error: BaseException) -> None:
        self.path = path
        self.action = action
        self.error = error
        super().__init__(
            f"could not {action} store {path!r}: {type(error).__name__}: {error}; nothing was "
            f"committed - free disk space or fix the permissions and retry"
        )


class InvalidCommit(StoreError):
    """A commit was refused because its content breaks a thread invariant."""


class DuplicateMessageId(InvalidCommit):
    """A message id already exists in the thread (or twice in one commit)."""

    def __init__(self, thread_id: str, message_id: str) -> None:
        self.thread_id = thread_id
        self.message_id = message_id
        super().__init__(
            f"thread {thread_id!r} already has a message with id {message_id!r}; message ids "
            f"are unique per thread - give each new message a fresh id"
        )


class UnmatchedToolResult(InvalidCommit):
    """A tool message answers a call id no assistant message of the thread made."""

    def __init__(self, thread_id: str, call_id: str | None) -> None:
        self.thread_id = thread_id
        self.call_id = call_id
        super().__init__(
            f"thread {thread_id!r}: tool message answers call {call_id!r}, but no assistant "
            f"message of the thread made that call; commit the assistant message first"
        )


class RunRecordError(InvalidCommit):
    """A run record breaks its status transitions (an ended run is final)."""


class ConfigNotFound(StoreError, KeyError):
    """No published config for an agent id (or not that version)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "config not found"


class LeaseLost(ThreadBusy):
    """The holder's lease on a thread expired and another run took the thread."""
