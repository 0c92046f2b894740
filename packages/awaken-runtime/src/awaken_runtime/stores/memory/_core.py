"""The in-memory data model shared by the memory and file backends.

:class:`Core` holds threads, scoped state, run records, event logs, configs
and leases in plain Python structures. ``prepare_commit`` validates a commit
without changing anything; ``apply_commit`` applies a prepared commit. The
file backend keeps a ``Core`` as its mirror and appends each change to disk
before applying it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..._errors import LeaseFenced, VersionConflict
from ...lifecycle._failures import Phase
from ...messages._message import Message
from ...messages._stored import StoredMessages
from ...state._engine import (
    Command,
    CommittedBatch,
    Scope,
    StoreKey,
    apply_command,
    check_batches,
)
from ...suspension._suspension import ParkedRun, ThreadBusy
from .._errors import LeaseLost
from .._ports import Lease
from .._rules import check_event_seqs, check_messages, merge_run, persistent
from .._thread_store import RunRecord, ScopeBinding, ThreadSnapshot

if TYPE_CHECKING:
    from .._records import ConfigVersion, PruneReport, StreamEvent, ThreadInfo

__all__ = ["Core", "Prepared", "ThreadData"]


class ThreadData:
    """One thread as kept in memory."""

    # A plain class, not a dataclass: generating a dataclass's methods at import costs
    # more than a short run itself (see tests/runtime/test_working_import.py).
    __slots__ = (
        "batches",
        "call_ids",
        "latest_run_id",
        "messages",
        "msg_ids",
        "parked",
        "run_ids",
        "state",
        "thread_id",
        "updated_at",
        "version",
    )

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.messages: list[Message] | StoredMessages = []
        """A list, or (the file store's first read of a thread) rows decoded when first read."""
        self.msg_ids: set[str] = set()
        self.call_ids: set[str] = set()
        self.batches: list[CommittedBatch] = []
        self.state: dict[StoreKey, Any] = {}
        self.version = 0
        self.parked: ParkedRun | None = None
        self.run_ids: list[str] = []
        self.latest_run_id: str | None = None
        self.updated_at = 0.0

    def check(self, expected_version: int, messages: Sequence[Message]) -> None:
        """Raise unless the thread is at ``expected_version`` and ``messages`` may follow."""
        if self.version != expected_version:
            raise VersionConflict(self.thread_id, expected_version, self.version)
        check_messages(
            self.thread_id, messages, self.msg_ids.__contains__, self.call_ids.__contains__
        )

    def advance(self, messages: Sequence[Message], parked: ParkedRun | None, at: float) -> int:
        """Append ``messages``, set the parked run and move to the next version."""
        self.add_messages(messages)
        self.parked = parked
        self.version += 1
        self.updated_at = at
        return self.version

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Append messages and index their ids and tool calls."""
        self.messages.extend(messages)
        msg_ids, call_ids = self.msg_ids, self.call_ids
        for message in messages:
            msg_ids.add(message.id)
            tool_calls = message.tool_calls
            if tool_calls:
                for call in tool_calls:
                    call_ids.add(call.id)

    def index_rows(self, rows: Sequence[Any]) -> None:
        """Index the ids and tool calls of messages kept as stored JSON objects, undecoded.

        Raises ``KeyError`` or ``TypeError`` on a row without the shape every stored
        message has (an object with an ``id``; tool calls objects with an ``id``).
        """
        msg_ids, call_ids = self.msg_ids, self.call_ids
        for row in rows:
            msg_ids.add(row["id"])
            tool_calls = row.get("tool_calls")
            if tool_calls:
                for call in tool_calls:
                    call_ids.add(call["id"])


class Prepared:
    """A validated commit, ready to apply."""

    __slots__ = ("batches", "record")

    def __init__(self, batches: list[CommittedBatch], record: RunRecord | None) -> None:
        self.batches = batches
        self.record = record


class Core:
    """Everything a store keeps, in memory (not thread-safe; callers lock)."""

    def __init__(self) -> None:
        self.threads: dict[str, ThreadData] = {}
        self.scoped: dict[tuple[Scope, str], dict[StoreKey, Any]] = {}
        self.runs: dict[str, RunRecord] = {}
        self.events: dict[str, list[StreamEvent]] = {}
        self.configs: dict[str, list[ConfigVersion]] = {}
        self.leases: dict[str, Lease] = {}

    # -- threads ---------------------------------------------------------------

    def snapshot(self, binding: ScopeBinding) -> ThreadSnapshot:
        """The committed thread plus the profile and shared state of ``binding``."""
        thread = self.threads.get(binding.thread_id) or ThreadData(binding.thread_id)
        state = dict(thread.state)
        state.update(self.scoped.get((Scope.PROFILE, binding.profile_id), {}))
        state.update(self.scoped.get((Scope.SHARED, binding.namespace), {}))
        latest = self.runs.get(thread.latest_run_id) if thread.latest_run_id else None
        return ThreadSnapshot(
            binding.thread_id,
            thread.messages.copy(),
            state,
            thread.version,
            thread.parked,
            latest,
            frozenset(thread.call_ids),
        )

    def prepare_commit(
        self,
        binding: ScopeBinding,
        expected_version: int,
        messages: Sequence[Message],
        batches: Sequence[CommittedBatch],
        record: RunRecord | None,
    ) -> Prepared:
        """Validate a commit; raise without changing anything."""
        tid = binding.thread_id
        (self.threads.get(tid) or ThreadData(tid)).check(expected_version, messages)
        merged = merge_run(tid, self.runs.get(record.run_id), record) if record else None
        kept = persistent(batches) if batches else []
        check_batches(kept)  # what could not be read back is refused, nothing written
        return Prepared(kept, merged)

    def commit_messages(
        self, binding: ScopeBinding, expected_version: int, messages: Sequence[Message], at: float
    ) -> int | None:
        """Commit messages alone to an existing thread (a run's per-step checkpoint).

        The same checks and effects as ``prepare_commit`` + ``apply_commit`` with no
        batches, record or parked run, in one pass. Returns ``None`` (having done
        nothing) for a thread not stored yet: the general path handles that.
        """
        thread = self.threads.get(binding.thread_id)
        if thread is None:
            return None
        thread.check(expected_version, messages)
        return thread.advance(messages, None, at)

    def apply_commit(
        self,
        binding: ScopeBinding,
        messages: Sequence[Message],
        prepared: Prepared,
        parked: ParkedRun | None,
        at: float,
        *,
        scoped: bool = True,
    ) -> int:
        """Apply a prepared commit; ``scoped=False`` skips profile/shared state."""
        thread = self.threads.get(binding.thread_id)
        if thread is None:
            thread = self.threads[binding.thread_id] = ThreadData(binding.thread_id)
        for batch in prepared.batches:
            thread.batches.append(batch)
            for _producer, command in batch.entries:
                if command.scope is Scope.THREAD:
                    apply_command(thread.state, command)
                elif scoped:
                    self.apply_scoped(command.scope, binding.owner(command.scope), [command])
        record = prepared.record
        if record is not None:
            if record.run_id not in self.runs:
                thread.run_ids.append(record.run_id)
            self.runs[record.run_id] = record
            thread.latest_run_id = record.run_id
        return thread.advance(messages, parked, at)

    def apply_scoped(self, scope: Scope, owner: str, commands: Iterable[Command]) -> None:
        """Apply commands to the state of ``(scope, owner)`` (their own scope is ignored)."""
        target = self.scoped.setdefault((scope, owner), {})
        for command in commands:
            if command.scope is not scope:
                command = command.model_copy(update={"scope": scope})
            apply_command(target, command)

    def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """``key -> value`` of one scope owner."""
        return {k: v for (_s, k), v in self.scoped.get((scope, owner), {}).items()}

    def info(self, thread_id: str) -> ThreadInfo:
        """The listing entry of a stored thread."""
        from .._records import ThreadInfo  # listings, configs and pruning load their records

        t = self.threads[thread_id]
        return ThreadInfo(
            thread_id=thread_id,
            version=t.version,
            messages=len(t.messages),
            updated_at=datetime.fromtimestamp(t.updated_at).astimezone(),
            parked=t.parked is not None,
            latest_run_id=t.latest_run_id,
        )

    def delete_thread(self, thread_id: str) -> bool:
        """Forget a thread, its runs, their events and its lease."""
        thread = self.threads.pop(thread_id, None)
        self.leases.pop(thread_id, None)
        if thread is None:
            return False
        for run_id in thread.run_ids:
            self.runs.pop(run_id, None)
            self.events.pop(run_id, None)
        return True

    # -- events, configs ----------------------------------------------------------

    def check_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Raise ``ValueError`` unless seqs strictly increase past the stored ones."""
        stored = self.events.get(run_id)
        check_event_seqs(run_id, stored[-1].seq if stored else 0, events)

    def next_config(self, agent_id: str, config: dict[str, Any], note: str) -> ConfigVersion:
        """The version a publish of ``config`` would create."""
        from .._records import ConfigVersion

        versions = self.configs.get(agent_id)
        number = versions[-1].version + 1 if versions else 1
        return ConfigVersion(agent_id=agent_id, version=number, config=config, note=note)

    # -- leases -----------------------------------------------------------------

    def acquire(self, thread_id: str, holder: str, ttl: float, token: str) -> Lease:
        """Take the thread's lease (stealing an expired one) or raise ``ThreadBusy``."""
        now = time.time()
        current = self.leases.get(thread_id)
        if current is not None and current.expires_at > now and current.holder != holder:
            raise ThreadBusy(
                f"thread {thread_id!r} has an active run (lease held by {current.holder!r} "
                f"for {current.expires_at - now:.1f}s more); wait for it to end, or cancel it"
            )
        lease = Lease(thread_id=thread_id, holder=holder, token=token, expires_at=now + ttl)
        self.leases[thread_id] = lease
        return lease

    def renew(self, lease: Lease, ttl: float) -> Lease:
        """Extend ``lease`` or raise ``LeaseLost``."""
        current = self.leases.get(lease.thread_id)
        if current is None or current.token != lease.token:
            raise LeaseLost(
                f"the lease of {lease.holder!r} on thread {lease.thread_id!r} expired and the "
                f"thread was taken by another run; this run must stop"
            )
        renewed = lease.model_copy(update={"expires_at": time.time() + ttl})
        self.leases[lease.thread_id] = renewed
        return renewed

    def fence(self, lease: Lease | None, thread_id: str, expected_version: int) -> None:
        """Raise ``LeaseFenced`` unless ``lease`` (if given) still holds ``thread_id``."""
        if lease is None:
            return
        current = self.leases.get(thread_id)
        if current is None or current.token != lease.token:
            raise LeaseFenced(thread_id, expected_version, lease.holder)

    def release(self, lease: Lease) -> None:
        """Drop ``lease`` if it is still the current one."""
        current = self.leases.get(lease.thread_id)
        if current is not None and current.token == lease.token:
            del self.leases[lease.thread_id]

    # -- retention ----------------------------------------------------------------

    def prune(self, cut: datetime) -> tuple[PruneReport, set[str]]:
        """Remove superseded data older than ``cut``; also returns the touched thread ids."""
        from .._records import PruneReport

        report = PruneReport()
        touched: set[str] = set()
        live = {t.latest_run_id for t in self.threads.values()}
        for run_id, record in list(self.runs.items()):
            if record.phase is not Phase.ENDED or record.updated_at >= cut:
                continue
            report.events += len(self.events.pop(run_id, []))
            if run_id in live:
                continue
            del self.runs[run_id]
            report.runs += 1
            thread = self.threads.get(record.thread_id)
            if thread is not None:
                thread.run_ids.remove(run_id)
                touched.add(record.thread_id)
        for run_id, events in list(self.events.items()):
            if run_id not in self.runs and events and events[-1].at < cut:
                report.events += len(self.events.pop(run_id))
        for agent_id, versions in self.configs.items():
            kept = [v for v in versions[:-1] if v.published_at >= cut] + versions[-1:]
            report.configs += len(versions) - len(kept)
            self.configs[agent_id] = kept
        return report, touched
