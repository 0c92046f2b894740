"""The thread-store ports the loop uses, and the types they exchange.

The loop talks to storage only through :class:`ThreadStore`: it loads a
thread (messages, thread-scope state, version) plus the profile and shared
scopes it binds to, and commits each checkpoint atomically with optimistic
concurrency. Persistent backends implement the same port.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .._defaults import new_list
from ..lifecycle._failures import EndCause, Phase
from ..messages._message import Message
from ..models._model import TokenUsage
from ..plugins._actions import ScheduledAction
from ..state._engine import CommittedBatch, Scope, StoreKey
from ..suspension._suspension import ParkedRun

if TYPE_CHECKING:
    from ._ports import Lease

__all__ = ["RunRecord", "ScopeBinding", "ThreadSnapshot", "ThreadStore"]


@dataclass(frozen=True, slots=True)
class ScopeBinding:
    """Concrete owners of the persistent scopes for one run."""

    thread_id: str
    profile_id: str
    namespace: str

    def owner(self, scope: Scope) -> str:
        """The id a command of ``scope`` is bound to (run scope is never persisted)."""
        if scope is Scope.THREAD:
            return self.thread_id
        if scope is Scope.PROFILE:
            return self.profile_id
        return self.namespace


class RunRecord(BaseModel):
    """What a store keeps about one run."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    run_id: str
    thread_id: str
    agent_id: str
    phase: Phase
    end_cause: EndCause | None = None
    steps: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    pending_actions: list[ScheduledAction] = Field(default_factory=new_list)
    """For an ended run: the scheduled actions it never ran (``RunState.pending_actions``),
    kept with the record so whoever wakes the thread later finds them after a crash."""


@dataclass(slots=True)
class ThreadSnapshot:
    """A committed thread as loaded: messages, persistent state, version."""

    thread_id: str
    messages: Sequence[Message]
    """In order. The SQLite and file stores give a ``StoredMessages``: rows decoded when
    first read (a damaged one raises ``StoreCorrupt`` there); it equals a list of the same
    messages."""
    state: dict[StoreKey, Any]
    version: int
    parked: ParkedRun | None = None
    """The run waiting for decisions on this thread, if any."""
    latest_run: RunRecord | None = None
    """The record of the thread's most recently recorded run, if any."""
    call_ids: frozenset[str] | None = None
    """Every tool-call id in ``messages``, from stores that index them anyway (``None``:
    unknown; the run then scans the messages once)."""


@runtime_checkable
class CommittedThreadView(Protocol):
    """Port: load a committed thread (messages, state, version, tickets, latest run)."""

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """Load the thread and the profile/shared state ``binding`` points at."""
        ...


@runtime_checkable
class Coordinator(Protocol):
    """Port: atomic thread commits with optimistic concurrency."""

    async def commit(
        self,
        binding: ScopeBinding,
        expected_version: int,
        messages: Sequence[Message],
        batches: Sequence[CommittedBatch],
        run_record: RunRecord | None = None,
        parked: ParkedRun | None = None,
        *,
        lease: Lease | None = None,
    ) -> int:
        """Append atomically and return the new version.

        Raises ``VersionConflict`` if the thread is no longer at
        ``expected_version``; then nothing is written. ``parked`` replaces the
        thread's parked-run record with its tickets (``None`` clears it).
        ``lease`` fences the commit (stores with leases; the runtime passes the
        run's lease to no other kind): unless that lease still holds the thread,
        checked in the same transaction, the commit raises ``LeaseFenced`` (a
        ``VersionConflict``) and writes nothing, so a holder that lost its lease
        writes nothing more.
        """
        ...


@runtime_checkable
class ThreadStore(CommittedThreadView, Coordinator, Protocol):
    """The storage port the loop checkpoints through (load + commit)."""


def persistent_batch(batch: CommittedBatch) -> CommittedBatch | None:
    """``batch`` without its run-scope entries, or ``None`` if nothing remains."""
    entries = [(p, c) for p, c in batch.entries if c.scope is not Scope.RUN]
    if not entries:
        return None
    if len(entries) == len(batch.entries):
        return batch
    return CommittedBatch(revision=batch.revision, phase=batch.phase, entries=entries)
