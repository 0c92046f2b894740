"""The thread-store port and its in-memory implementation.

The loop talks to storage only through :class:`ThreadStore`: it loads a
thread (messages, thread-scope state, version) plus the profile and shared
scopes it binds to, and commits each checkpoint atomically with optimistic
concurrency. Persistent backends implement the same port.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ._errors import VersionConflict
from ._failures import EndCause, Phase
from ._messages import Message
from ._models import TokenUsage
from ._state import Command, CommittedBatch, Scope, StoreKey, apply_command
from ._suspension import ParkedRun

__all__ = [
    "InMemoryStore",
    "RunRecord",
    "ScopeBinding",
    "ThreadSnapshot",
    "ThreadStore",
]


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

    model_config = ConfigDict(frozen=True)
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


@dataclass(slots=True)
class ThreadSnapshot:
    """A committed thread as loaded: messages, persistent state, version."""

    thread_id: str
    messages: list[Message]
    state: dict[StoreKey, Any]
    version: int
    parked: ParkedRun | None = None
    """The run waiting for decisions on this thread, if any."""


@runtime_checkable
class ThreadStore(Protocol):
    """The storage port the loop checkpoints through."""

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """Load the thread and the profile/shared state ``binding`` points at."""
        ...

    async def commit(
        self,
        binding: ScopeBinding,
        expected_version: int,
        messages: Sequence[Message],
        batches: Sequence[CommittedBatch],
        run_record: RunRecord | None = None,
        parked: ParkedRun | None = None,
    ) -> int:
        """Append atomically; raise ``VersionConflict`` if the version moved.

        ``parked`` replaces the thread's parked-run record (``None`` clears it).
        """
        ...


def persistent_batch(batch: CommittedBatch) -> CommittedBatch | None:
    """``batch`` without its run-scope entries, or ``None`` if nothing remains."""
    entries = [(p, c) for p, c in batch.entries if c.scope is not Scope.RUN]
    if not entries:
        return None
    if len(entries) == len(batch.entries):
        return batch
    return CommittedBatch(revision=batch.revision, phase=batch.phase, entries=entries)


@dataclass(slots=True)
class _Thread:
    messages: list[Message] = field(default_factory=list)
    batches: list[CommittedBatch] = field(default_factory=list)
    state: dict[StoreKey, Any] = field(default_factory=dict)
    version: int = 0
    parked: ParkedRun | None = None


class InMemoryStore:
    """A :class:`ThreadStore` in process memory (tests, notebooks, the demo).

    Commits are O(new data): messages and batches are appended, and only the
    keys a batch touches are updated.
    """

    def __init__(self) -> None:
        self._threads: dict[str, _Thread] = {}
        self._scoped: dict[tuple[Scope, str], dict[StoreKey, Any]] = {}
        self.runs: dict[str, RunRecord] = {}
        self._lock = asyncio.Lock()

    def messages(self, thread_id: str) -> list[Message]:
        """A copy of the committed messages of a thread."""
        thread = self._threads.get(thread_id)
        return list(thread.messages) if thread else []

    def batches(self, thread_id: str) -> list[CommittedBatch]:
        """Every persisted batch of a thread, in commit order."""
        thread = self._threads.get(thread_id)
        return list(thread.batches) if thread else []

    def thread_state(self, thread_id: str) -> dict[StoreKey, Any]:
        """A copy of a thread's committed thread-scope state."""
        thread = self._threads.get(thread_id)
        return dict(thread.state) if thread else {}

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """Load the thread plus its profile and shared state."""
        thread = self._threads.get(binding.thread_id) or _Thread()
        state = dict(thread.state)
        state.update(self._scoped.get((Scope.PROFILE, binding.profile_id), {}))
        state.update(self._scoped.get((Scope.SHARED, binding.namespace), {}))
        return ThreadSnapshot(
            binding.thread_id, list(thread.messages), state, thread.version, thread.parked
        )

    async def commit(
        self,
        binding: ScopeBinding,
        expected_version: int,
        messages: Sequence[Message],
        batches: Sequence[CommittedBatch],
        run_record: RunRecord | None = None,
        parked: ParkedRun | None = None,
    ) -> int:
        """Append messages and batches if the thread is still at ``expected_version``."""
        async with self._lock:
            thread = self._threads.setdefault(binding.thread_id, _Thread())
            if thread.version != expected_version:
                raise VersionConflict(binding.thread_id, expected_version, thread.version)
            thread.messages.extend(messages)
            for batch in batches:
                kept = persistent_batch(batch)
                if kept is None:
                    continue
                thread.batches.append(kept)
                for _producer, command in kept.entries:
                    self._apply(binding, thread, command)
            if run_record is not None:
                self.runs[run_record.run_id] = run_record
            thread.parked = parked
            thread.version += 1
            return thread.version

    def _apply(self, binding: ScopeBinding, thread: _Thread, command: Command) -> None:
        if command.scope is Scope.THREAD:
            target = thread.state
        else:
            target = self._scoped.setdefault((command.scope, binding.owner(command.scope)), {})
        apply_command(target, command)
