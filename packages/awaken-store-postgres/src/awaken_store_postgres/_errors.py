"""Typed errors of the Postgres store, and the mapping from psycopg's errors."""

from __future__ import annotations

import psycopg

from awaken_runtime.stores import StoreCorrupt, StoreError, StoreIOError, StoreSchemaError

__all__ = ["CommitOutcomeUnknown", "PostgresSchemaError", "UnstorableText", "translate"]


class PostgresSchemaError(StoreSchemaError):
    """The schema's version is not the one this code writes, and it will not be changed.

    Raised on open for a schema newer than the code (any store), and for an
    older or missing one when the store was opened with ``migrate=False``.
    """

    def __init__(self, where: str, found: int, supported: int) -> None:
        self.path = where
        self.found = found
        self.supported = supported
        if found > supported:
            fix = (
                f"this awaken-store-postgres supports up to version {supported}; upgrade "
                f"awaken-store-postgres on this machine (every worker must run a version that "
                f"knows schema {found}) - schemas are never downgraded"
            )
        else:
            fix = (
                f"this awaken-store-postgres needs version {supported} and was told not to "
                f"migrate; run `awaken-store-postgres migrate DSN --schema ...` or open the "
                f"store with migrate=True"
            )
        # StoreSchemaError's own message names awaken-runtime; this one names the real fix.
        StoreError.__init__(self, f"store {where} has schema version {found}, but {fix}")


class CommitOutcomeUnknown(StoreError):
    """The connection broke after COMMIT was sent: the write may or may not hold.

    For a thread commit, reload the thread: if its version moved past the
    expected one, the commit (or another writer's) landed; retrying blindly
    could apply a step twice.
    """

    def __init__(
        self, where: str, action: str, error: BaseException, thread_id: str | None = None
    ) -> None:
        self.where = where
        self.action = action
        self.thread_id = thread_id
        self.error = error
        check = (
            f"reload thread {thread_id!r} and compare its version before retrying"
            if thread_id is not None
            else "read it back before retrying"
        )
        super().__init__(
            f"the connection to {where} broke during COMMIT (to {action} it: "
            f"{type(error).__name__}: {error}); the write may or may not have been applied - "
            f"{check}"
        )


class UnstorableText(StoreError, ValueError):
    """An id (thread, profile, namespace, run, message, call, agent, holder) contains NUL.

    PostgreSQL ``text`` cannot hold the NUL character; nothing was written.
    """

    def __init__(self, where: str, action: str) -> None:
        self.where = where
        self.action = action
        super().__init__(
            f"could not {action} {where}: an id contains a NUL character (\\x00), which "
            f"PostgreSQL text cannot store; nothing was written - remove the NUL from the id "
            f"(state keys, object fields and values may contain it)"
        )


def translate(where: str, action: str, exc: psycopg.Error) -> StoreError:
    """The typed store error for a psycopg error raised before anything was committed."""
    # psycopg refuses a NUL in a text parameter; the server, in a binary text array.
    if (isinstance(exc, psycopg.DataError) and "NUL" in str(exc)) or (
        isinstance(exc, psycopg.errors.CharacterNotInRepertoire) and "0x00" in str(exc)
    ):
        return UnstorableText(where, action)
    if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.UndefinedColumn):
        return StoreCorrupt(
            where,
            f"a table or column of the awaken schema is missing ({exc}); it was altered by "
            f"hand or dropped",
        )
    return StoreIOError(where, action, exc)
