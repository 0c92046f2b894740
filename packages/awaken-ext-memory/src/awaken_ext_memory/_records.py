"""Memory records, tombstones, and the state key that holds them.

All memories of one scope owner (a profile, a thread, or a shared namespace)
live under one object-valued COMMUTATIVE state key, :data:`RECORDS_KEY`, as
``{memory id: record data}``. A write stages ``{id: data}`` for just the
memories it touches, so the commit is a shallow merge: atomic, audited in the
revision log, replayable and persisted by every store backend. Forgetting
writes a :class:`Tombstone` under the id; the text is gone from the current
state (the revision log keeps history, as for every key).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from awaken_runtime import Command, MergePolicy, Scope

__all__ = [
    "RECORDS_KEY",
    "MemoryKind",
    "MemoryRecord",
    "MemorySource",
    "Tombstone",
    "live_records",
    "new_memory_id",
    "parse_entry",
    "records_command",
    "utcnow",
]

RECORDS_KEY = "memory.records"
"""The state key holding ``{memory id: MemoryRecord | Tombstone data}`` (COMMUTATIVE)."""

MemoryKind = str
"""``"fact"``, ``"preference"``, ``"event"``, or any user-defined kind."""


def utcnow() -> datetime:
    """The current time in UTC (the default clock of the plugin)."""
    return datetime.now(UTC)


def new_memory_id() -> str:
    """A fresh, globally unique memory id (``mem_`` + 16 hex digits)."""
    return "mem_" + uuid.uuid4().hex[:16]


class MemorySource(BaseModel):
    """Where a memory came from: thread, run and (when known) message or tool call."""

    model_config = ConfigDict(frozen=True)
    thread_id: str | None = None
    run_id: str | None = None
    message_id: str | None = None
    """The user message the memory was taken from, or the tool call id that wrote it."""
    via: str = "tool"
    """``"tool"`` (the model called ``remember``), ``"extractor"``, or ``"api"``."""


class MemoryRecord(BaseModel):
    """One long-term memory as it is stored in state."""

    model_config = ConfigDict(frozen=True)
    id: str
    text: str
    kind: MemoryKind = "fact"
    tags: tuple[str, ...] = ()
    created_at: datetime
    updated_at: datetime
    source: MemorySource = Field(default_factory=MemorySource)
    embedder: str
    """Id of the embedder the memory was first indexed with."""
    deleted: Literal[False] = False

    def to_state(self) -> dict[str, Any]:
        """The JSON data written under the memory's id."""
        return self.model_dump(mode="json")


class Tombstone(BaseModel):
    """What ``forget`` writes in place of a memory: its id and when it was forgotten."""

    model_config = ConfigDict(frozen=True)
    id: str
    deleted: Literal[True] = True
    updated_at: datetime
    source: MemorySource = Field(default_factory=MemorySource)

    def to_state(self) -> dict[str, Any]:
        """The JSON data written under the memory's id."""
        return self.model_dump(mode="json")


def parse_entry(value: Any) -> MemoryRecord | None:
    """A stored entry as a record, or ``None`` for tombstones and malformed data."""
    if not isinstance(value, Mapping) or value.get("deleted", False):
        return None
    try:
        return MemoryRecord.model_validate(value)
    except ValueError:
        return None


def is_live(value: Any) -> bool:
    """Whether a stored entry is a memory (not a tombstone), without full validation."""
    return isinstance(value, Mapping) and not value.get("deleted", False) and "text" in value


def live_records(entries: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """``(id, data)`` of every live memory in a records value."""
    return ((mid, data) for mid, data in entries.items() if is_live(data))


def records_command(scope: Scope, entries: Mapping[str, Any]) -> Command:
    """The COMMUTATIVE write of ``{id: data}`` entries into the records key."""
    return Command.set(RECORDS_KEY, dict(entries), scope=scope, merge=MergePolicy.COMMUTATIVE)
