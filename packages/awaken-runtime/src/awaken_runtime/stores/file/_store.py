"""``FileStore``: append-only JSONL files in a directory, fsynced, with a lock file.

Layout of the store directory::

    LOCK                  flock'ed by every operation (processes may share the store)
    threads/<id>.jsonl    one line per commit of the thread (compaction: one snapshot line),
                          its messages framed last (``_lines.py``)
    global.jsonl          profile/shared state changes, the run index, config versions
    events/<run>.jsonl    per-run stream event logs
    leases.jsonl          lease changes, appended (compacted now and then)

A commit appends its global line (if it has profile/shared writes or a new
run) first and its thread line second; the thread line is the commit point.
A global line whose thread line never landed (a crash in between) is cut off
by the next lock holder; a torn last line is cut off and logged. Each process
keeps an in-memory mirror (:class:`~._mirror.FileMirror`) and reads only
what other processes appended since, so commits and loads cost O(new data);
a thread read from its start keeps its messages undecoded until a run reads them.
Operations run on the store's own thread (``_io.py``), never on the
event loop; per-step commits of concurrent runs share one round of fsyncs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ...messages._message import Message
from ...state._engine import Command, CommittedBatch, Scope
from ...suspension._suspension import ParkedRun
from .._ports import Lease, cutoff
from .._records import ConfigVersion, Page, PruneReport, StreamEvent, ThreadInfo
from .._rules import config_dict, find_config, page
from .._thread_store import RunRecord, ScopeBinding, ThreadSnapshot
from ..memory._core import Core
from ._commit import commit_lines
from ._io import FileIO, FsyncRound
from ._leases import LeaseLog
from ._mirror import FileMirror, read_event_log
from ._retention import prune_files

__all__ = ["FileStore"]


class FileStore:
    """A full store in a directory of append-only JSONL files.

    Each process mirrors the threads it touches in memory, at most
    ``max_cached_threads`` of them between operations (least recently used
    first out; an evicted thread is re-read from its file when next used).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        lease_ttl: float = 30.0,
        max_cached_threads: int = 256,
    ) -> None:
        self.dir = Path(directory)
        self.lease_ttl = lease_ttl
        """Seconds a run's lease on a thread lives without renewal."""
        self._files = FileMirror(self.dir, max_cached_threads)
        self.core = self._files.core
        self._io = FileIO(self._files)
        self._leases = LeaseLog(self._files)

    # -- ThreadStore --------------------------------------------------------------------

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """Load the thread plus its profile and shared state."""
        files = self._files

        def op() -> ThreadSnapshot:
            files.sync_thread(binding.thread_id)
            return files.core.snapshot(binding)

        return await self._io.run(f"load thread {binding.thread_id!r}", op)

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
        """Append one fsynced line (two with profile/shared writes or a new run); given
        ``lease``, only while that lease still holds the thread (checked under the lock)."""

        def fenced(round_: FsyncRound) -> tuple[int, str | None]:
            if lease is not None:
                self._leases.sync().fence(lease, binding.thread_id, expected_version)
            return commit_lines(
                self._files,
                round_,
                binding,
                expected_version,
                messages,
                batches,
                run_record,
                parked,
            )

        return await self._io.commit(f"commit thread {binding.thread_id!r}", fenced)

    def compact(self, thread_id: str) -> None:
        """Rewrite a thread's file as one snapshot line (atomic rename); a no-op if absent."""
        with self._files.locked():
            self._files.compact(thread_id)

    async def close(self) -> None:
        """Nothing stays open between operations (the store's thread ends when idle)."""
        await self._io.run("close", lambda: None)

    # -- reads, runs, threads -----------------------------------------------------------

    async def read_messages(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[Message]:
        """Messages with seq > ``after``."""

        def op() -> Page[Message]:
            thread = self._files.sync_thread(thread_id)
            return page(thread.messages if thread else [], after, limit)

        return await self._io.run(f"read messages of thread {thread_id!r}", op)

    async def read_batches(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[CommittedBatch]:
        """Persisted batches with seq > ``after``."""

        def op() -> Page[CommittedBatch]:
            thread = self._files.sync_thread(thread_id)
            return page(thread.batches if thread else [], after, limit)

        return await self._io.run(f"read batches of thread {thread_id!r}", op)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The record of ``run_id``."""
        files = self._files

        def op() -> RunRecord | None:
            tid = files.run_index.get(run_id)
            if tid is not None:
                files.sync_thread(tid)
            return files.core.runs.get(run_id)

        return await self._io.run(f"read run {run_id!r}", op)

    async def list_runs(self, thread_id: str) -> list[RunRecord]:
        """A thread's run records, oldest first."""
        files = self._files

        def op() -> list[RunRecord]:
            thread = files.sync_thread(thread_id)
            return [files.core.runs[r] for r in thread.run_ids] if thread else []

        return await self._io.run(f"list runs of thread {thread_id!r}", op)

    async def list_threads(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        parked: bool | None = None,
        updated_after: datetime | None = None,
    ) -> list[ThreadInfo]:
        """Threads ordered by id after ``after``, filtered (reads every thread file)."""
        files = self._files

        def op() -> list[ThreadInfo]:
            out = []
            for tid in files.all_threads():
                info = files.core.info(tid)
                if after is not None and tid <= after:
                    continue
                if parked is not None and info.parked != parked:
                    continue
                if updated_after is not None and info.updated_at <= updated_after:
                    continue
                out.append(info)
            return out[:limit]

        return await self._io.run("list threads", op)

    async def delete_thread(self, thread_id: str) -> bool:
        """Remove the thread's file, its runs' event logs and its lease."""
        files = self._files

        def op() -> bool:
            thread = files.sync_thread(thread_id)
            if thread is None:
                return False
            for run_id in thread.run_ids:
                files.event_path(run_id).unlink(missing_ok=True)
                files.core.events.pop(run_id, None)
            files.remove_thread(thread_id)
            if self._leases.sync().leases.pop(thread_id, None) is not None:
                self._leases.changed(thread_id, None)
            files.mark_deleted(thread_id)
            return True

        return await self._io.run(f"delete thread {thread_id!r}", op)

    # -- stream events ------------------------------------------------------------------

    async def append_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Append to the run's event log (seqs must increase)."""
        if not events:
            return
        files = self._files

        def op() -> None:
            path = files.event_path(run_id)
            files.core.events[run_id] = read_event_log(path)
            files.core.check_events(run_id, events)
            files.append(path, "".join(e.model_dump_json() + "\n" for e in events))

        await self._io.run(f"append events of run {run_id!r}", op)

    async def read_events(
        self, run_id: str, after: int = 0, limit: int = 1000
    ) -> list[StreamEvent]:
        """Events with seq > ``after``."""

        def op() -> list[StreamEvent]:
            events = read_event_log(self._files.event_path(run_id))
            return [e for e in events if e.seq > after][:limit]

        return await self._io.run(f"read events of run {run_id!r}", op)

    # -- profile / shared scope, configs --------------------------------------------------

    async def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """The state of one profile or namespace."""
        return await self._io.run(
            f"read {scope.value} state of {owner!r}",
            lambda: self._files.core.read_scope(scope, owner),
        )

    async def write_scope(self, scope: Scope, owner: str, commands: Sequence[Command]) -> None:
        """Apply commands to one profile or namespace (one fsynced line)."""
        ops = [[scope.value, owner, c.model_dump(mode="json")] for c in commands]
        files = self._files

        def op() -> None:
            files.append(files.global_path, json.dumps({"ops": ops}) + "\n")
            files.core.apply_scoped(scope, owner, commands)

        await self._io.run(f"write {scope.value} state of {owner!r}", op)

    async def publish_config(
        self, config: Mapping[str, Any] | BaseModel, *, note: str = ""
    ) -> ConfigVersion:
        """Store a new config version."""
        agent_id, data = config_dict(config)
        files = self._files

        def op() -> ConfigVersion:
            version = files.core.next_config(agent_id, data, note)
            entry = {"cfg": version.model_dump(mode="json")}
            files.append(files.global_path, json.dumps(entry) + "\n")
            files.core.configs.setdefault(agent_id, []).append(version)
            return version

        return await self._io.run(f"publish config of agent {agent_id!r}", op)

    async def get_config(self, agent_id: str, version: int | None = None) -> ConfigVersion:
        """The latest (or a given) config version."""
        return await self._io.run(
            f"read configs of agent {agent_id!r}",
            lambda: find_config(self._files.core.configs.get(agent_id), agent_id, version),
        )

    async def config_history(self, agent_id: str) -> list[ConfigVersion]:
        """Kept versions, oldest first."""
        return await self._io.run(
            f"read configs of agent {agent_id!r}",
            lambda: list(self._files.core.configs.get(agent_id, [])),
        )

    async def rollback_config(self, agent_id: str, version: int) -> ConfigVersion:
        """Republish ``version`` as the newest version."""
        old = await self.get_config(agent_id, version)
        return await self.publish_config(old.config, note=f"rollback to version {version}")

    # -- leases -------------------------------------------------------------------------

    def _lease_op(self, thread_id: str, change: Callable[[Core], Lease | None]) -> Lease | None:
        core = self._leases.sync()
        before = core.leases.get(thread_id)
        result = change(core)
        after = core.leases.get(thread_id)
        if after != before:
            self._leases.changed(thread_id, after)
        return result

    async def acquire_lease(self, thread_id: str, holder: str, ttl: float) -> Lease:
        """Take the thread or raise ``ThreadBusy``."""
        token = os.urandom(8).hex()
        lease = await self._io.run(
            f"lease thread {thread_id!r}",
            lambda: self._lease_op(thread_id, lambda c: c.acquire(thread_id, holder, ttl, token)),
        )
        assert lease is not None
        return lease

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a held lease or raise ``LeaseLost``."""
        renewed = await self._io.run(
            f"renew the lease on thread {lease.thread_id!r}",
            lambda: self._lease_op(lease.thread_id, lambda c: c.renew(lease, ttl)),
        )
        assert renewed is not None
        return renewed

    async def release_lease(self, lease: Lease) -> None:
        """Give the thread up."""
        await self._io.run(
            f"release the lease on thread {lease.thread_id!r}",
            lambda: self._lease_op(lease.thread_id, lambda c: c.release(lease)),
        )

    # -- retention ------------------------------------------------------------------------

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """Remove event logs of ended runs, superseded run records and config versions.

        Threads that lose run records and the global file are compacted
        (rewritten by atomic rename); messages, batches and state are kept.
        """
        cut = cutoff(older_than)
        return await self._io.run("prune", lambda: prune_files(self._files, cut))
