"""``InMemoryStore``: every store port in process memory (tests, notebooks, the demo)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...messages._message import Message
from ...state._engine import Command, CommittedBatch, Scope, StoreKey
from ...suspension._suspension import ParkedRun
from .._ports import Lease, cutoff
from .._rules import config_dict, find_config, page
from .._thread_store import RunRecord, ScopeBinding, ThreadSnapshot
from ._core import Core

if TYPE_CHECKING:
    from .._records import ConfigVersion, Page, PruneReport, StreamEvent, ThreadInfo

__all__ = ["InMemoryStore"]


class InMemoryStore:
    """A full store in process memory; nothing survives the process.

    Commits are O(new data): messages and batches are appended, and only the
    keys a batch touches are updated.
    """

    def __init__(self, *, lease_ttl: float = 30.0) -> None:
        self.core = Core()
        self.lease_ttl = lease_ttl
        """Seconds a run's lease on a thread lives without renewal."""

    # -- helpers for tests ------------------------------------------------------

    @property
    def runs(self) -> dict[str, RunRecord]:
        """Every run record by run id."""
        return self.core.runs

    def messages(self, thread_id: str) -> list[Message]:
        """A copy of the committed messages of a thread."""
        thread = self.core.threads.get(thread_id)
        return list(thread.messages) if thread else []

    def batches(self, thread_id: str) -> list[CommittedBatch]:
        """Every persisted batch of a thread, in commit order."""
        thread = self.core.threads.get(thread_id)
        return list(thread.batches) if thread else []

    def thread_state(self, thread_id: str) -> dict[StoreKey, Any]:
        """A copy of a thread's committed thread-scope state."""
        thread = self.core.threads.get(thread_id)
        return dict(thread.state) if thread else {}

    # -- ThreadStore ----------------------------------------------------------------

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """Load the thread plus its profile and shared state."""
        return self.core.snapshot(binding)

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
        """Append messages and batches if the thread is still at ``expected_version``
        (and, given ``lease``, while that lease still holds the thread)."""
        if lease is not None:
            self.core.fence(lease, binding.thread_id, expected_version)
        if not batches and run_record is None and parked is None:
            version = self.core.commit_messages(binding, expected_version, messages, time.time())
            if version is not None:
                return version
        prepared = self.core.prepare_commit(
            binding, expected_version, messages, batches, run_record
        )
        return self.core.apply_commit(binding, messages, prepared, parked, time.time())

    # -- reads, runs, threads -----------------------------------------------------------

    async def read_messages(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[Message]:
        """Messages with seq > ``after``."""
        return page(self.messages(thread_id), after, limit)

    async def read_batches(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[CommittedBatch]:
        """Persisted batches with seq > ``after``."""
        thread = self.core.threads.get(thread_id)
        return page(thread.batches if thread else [], after, limit)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The record of ``run_id``."""
        return self.core.runs.get(run_id)

    async def list_runs(self, thread_id: str) -> list[RunRecord]:
        """A thread's run records, oldest first."""
        thread = self.core.threads.get(thread_id)
        return [self.core.runs[r] for r in thread.run_ids] if thread else []

    async def list_threads(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        parked: bool | None = None,
        updated_after: datetime | None = None,
    ) -> list[ThreadInfo]:
        """Threads ordered by id after ``after``, filtered."""
        out: list[ThreadInfo] = []
        for tid in sorted(self.core.threads):
            if after is not None and tid <= after:
                continue
            info = self.core.info(tid)
            if parked is not None and info.parked != parked:
                continue
            if updated_after is not None and info.updated_at <= updated_after:
                continue
            out.append(info)
            if len(out) >= limit:
                break
        return out

    async def delete_thread(self, thread_id: str) -> bool:
        """Remove a thread with its runs and their events."""
        return self.core.delete_thread(thread_id)

    # -- events, scopes, configs ------------------------------------------------------

    async def append_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Append to the run's event log (seqs must increase)."""
        self.core.check_events(run_id, events)
        self.core.events.setdefault(run_id, []).extend(events)

    async def read_events(
        self, run_id: str, after: int = 0, limit: int = 1000
    ) -> list[StreamEvent]:
        """Events with seq > ``after``."""
        return [e for e in self.core.events.get(run_id, []) if e.seq > after][:limit]

    async def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """The state of one profile or namespace."""
        return self.core.read_scope(scope, owner)

    async def write_scope(self, scope: Scope, owner: str, commands: Sequence[Command]) -> None:
        """Apply commands to one profile or namespace."""
        self.core.apply_scoped(scope, owner, commands)

    async def publish_config(
        self, config: Mapping[str, Any] | BaseModel, *, note: str = ""
    ) -> ConfigVersion:
        """Store a new config version."""
        agent_id, data = config_dict(config)
        version = self.core.next_config(agent_id, data, note)
        self.core.configs.setdefault(agent_id, []).append(version)
        return version

    async def get_config(self, agent_id: str, version: int | None = None) -> ConfigVersion:
        """The latest (or a given) config version."""
        return find_config(self.core.configs.get(agent_id), agent_id, version)

    async def config_history(self, agent_id: str) -> list[ConfigVersion]:
        """Kept versions, oldest first."""
        return list(self.core.configs.get(agent_id, []))

    async def rollback_config(self, agent_id: str, version: int) -> ConfigVersion:
        """Republish ``version`` as the newest version."""
        old = await self.get_config(agent_id, version)
        return await self.publish_config(old.config, note=f"rollback to version {version}")

    # -- leases, retention ------------------------------------------------------------

    async def acquire_lease(self, thread_id: str, holder: str, ttl: float) -> Lease:
        """Take the thread or raise ``ThreadBusy``."""
        return self.core.acquire(thread_id, holder, ttl, os.urandom(8).hex())

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a held lease or raise ``LeaseLost``."""
        return self.core.renew(lease, ttl)

    async def release_lease(self, lease: Lease) -> None:
        """Give the thread up."""
        self.core.release(lease)

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """Remove superseded records older than the bound."""
        return self.core.prune(cutoff(older_than))[0]

    async def close(self) -> None:
        """Nothing to release."""
