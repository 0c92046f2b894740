"""``SQLiteStore``: the embedded default backend (stdlib ``sqlite3``, WAL).

Every operation is one short transaction on one connection, run by the
store's own thread (``_io.py``) so the event loop never waits on the
database; thread commits of concurrent runs that queue up together share one
transaction. Several processes may share a database: writers serialize on
``BEGIN IMMEDIATE`` and commits use the thread's version for optimistic
concurrency. Loads decode only the rows a process has not decoded before
(``_load.py``).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..._errors import LeaseFenced, VersionConflict
from ...messages._message import Message
from ...state._engine import Command, CommittedBatch, Scope, StoreKey, check_batches
from ...suspension._suspension import ParkedRun
from .._errors import LeaseLost, StoreIOError
from .._ports import Lease, cutoff
from .._records import ConfigVersion, Page, PruneReport, StreamEvent, ThreadInfo
from .._rows import decode_message_rows, decode_one
from .._rules import config_dict, find_config, merge_run, persistent
from .._thread_store import RunRecord, ScopeBinding, ThreadSnapshot
from . import _leases as leases
from . import _logs as logs
from . import _retention as retention
from ._commit import delete_thread_sql, insert_commit
from ._io import SQLiteIO
from ._load import MessageCache, load_thread
from ._schema import connect
from ._state import apply_command_sql, load_scope

__all__ = ["SQLiteStore"]


class SQLiteStore:
    """A full store in one SQLite file (``":memory:"`` for a private in-memory one).

    ``durable=True`` sets ``synchronous=FULL`` (survives power loss, slower);
    the default ``NORMAL`` survives a killed process, which is what WAL needs.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, durable: bool = False, lease_ttl: float = 30.0
    ) -> None:
        self.path = str(path)
        self.lease_ttl = lease_ttl
        """Seconds a run's lease on a thread lives without renewal."""
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreIOError(self.path, "create the directory of", exc) from exc
        self._conn = connect(self.path, durable=durable)
        self._io = SQLiteIO(self.path, self._conn)
        self._messages = MessageCache()

    # -- ThreadStore ------------------------------------------------------------------

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """Load the thread plus its profile and shared state."""
        return await self._io.read(
            f"load thread {binding.thread_id!r} from",
            lambda cur: load_thread(cur, self.path, self._messages, binding, self._run),
        )

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
        """Append messages, batches, state, run record and tickets in one transaction
        (given ``lease``, only while that lease still holds the thread)."""
        tid = binding.thread_id
        kept = persistent(batches)
        check_batches(kept)  # what could not be read back is refused, nothing written

        def op(cur: sqlite3.Cursor) -> int:
            if lease is not None and not leases.held(cur, lease):
                raise LeaseFenced(tid, expected_version, lease.holder)
            row = cur.execute(
                "SELECT version, n_messages, n_batches, latest_run FROM threads WHERE thread_id=?",
                (tid,),
            ).fetchone()
            version, n_msg, n_batch, latest = row if row is not None else (0, 0, 0, None)
            if version != expected_version:
                raise VersionConflict(tid, expected_version, version)
            record = None
            if run_record is not None:
                record = merge_run(tid, self._run(cur, run_record.run_id), run_record)
                latest = record.run_id
            insert_commit(cur, binding, (n_msg, n_batch), messages, kept, record)
            cur.execute(
                "INSERT OR REPLACE INTO threads VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    tid,
                    version + 1,
                    n_msg + len(messages),
                    n_batch + len(kept),
                    parked.model_dump_json() if parked is not None else None,
                    latest,
                    time.time(),
                ),
            )
            return int(version) + 1

        return await self._io.commit(f"commit thread {tid!r} to", op)

    # -- reads, runs, threads ---------------------------------------------------------------

    async def _page(
        self, table: str, thread_id: str, after: int, limit: int
    ) -> tuple[list[str], bool]:
        sql = f"SELECT body FROM {table} WHERE thread_id=? AND seq>? ORDER BY seq LIMIT ?"
        rows: list[tuple[str]] = await self._io.read(
            f"read {table} of thread {thread_id!r} from",
            lambda cur: cur.execute(sql, (thread_id, after, limit + 1)).fetchall(),
        )
        return [r[0] for r in rows[:limit]], len(rows) > limit

    async def read_messages(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[Message]:
        """Messages with seq > ``after``."""
        after = max(after, 0)
        bodies, more = await self._page("messages", thread_id, after, limit)
        what = f"thread {thread_id!r} message"
        items = decode_message_rows(self.path, what, bodies, after + 1)
        return Page(items, after + len(bodies), more)

    async def read_batches(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[CommittedBatch]:
        """Persisted batches with seq > ``after``."""
        after = max(after, 0)
        bodies, more = await self._page("batches", thread_id, after, limit)
        what = f"thread {thread_id!r} batch"
        items = [
            decode_one(self.path, f"{what} {after + i}", CommittedBatch, b)
            for i, b in enumerate(bodies, 1)
        ]
        return Page(items, after + len(items), more)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The record of ``run_id``."""
        return await self._io.read("read a run from", lambda cur: self._run(cur, run_id))

    async def list_runs(self, thread_id: str) -> list[RunRecord]:
        """A thread's run records, oldest first."""
        sql = "SELECT body FROM runs WHERE thread_id=? ORDER BY rowid"
        rows: list[tuple[str]] = await self._io.read(
            f"list runs of thread {thread_id!r} in",
            lambda cur: cur.execute(sql, (thread_id,)).fetchall(),
        )
        return [decode_one(self.path, f"thread {thread_id!r} run", RunRecord, r[0]) for r in rows]

    async def list_threads(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        parked: bool | None = None,
        updated_after: datetime | None = None,
    ) -> list[ThreadInfo]:
        """Threads ordered by id after ``after``, filtered."""
        sql = "SELECT thread_id, version, n_messages, updated_at, parked, latest_run FROM threads"
        where, args = ["thread_id > ?"], [after or ""]
        if parked is not None:
            where.append("parked IS NOT NULL" if parked else "parked IS NULL")
        if updated_after is not None:
            where.append("updated_at > ?")
            args.append(updated_after.timestamp())  # type: ignore[arg-type]
        sql += " WHERE " + " AND ".join(where) + " ORDER BY thread_id LIMIT ?"
        rows: list[tuple[Any, ...]] = await self._io.read(
            "list threads in", lambda cur: cur.execute(sql, (*args, limit)).fetchall()
        )
        return [
            ThreadInfo(
                thread_id=r[0],
                version=r[1],
                messages=r[2],
                updated_at=datetime.fromtimestamp(r[3]).astimezone(),
                parked=r[4] is not None,
                latest_run_id=r[5],
            )
            for r in rows
        ]

    async def delete_thread(self, thread_id: str) -> bool:
        """Remove a thread with its messages, state, runs and their events."""
        self._messages.forget(thread_id)
        return await self._io.write(
            f"delete thread {thread_id!r} from", lambda cur: delete_thread_sql(cur, thread_id)
        )

    # -- events, scopes, configs ----------------------------------------------------------

    async def append_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Append to the run's event log (seqs must increase)."""
        await self._io.write(
            f"append events of run {run_id!r} to",
            lambda cur: logs.append_events(cur, run_id, events),
        )

    async def read_events(
        self, run_id: str, after: int = 0, limit: int = 1000
    ) -> list[StreamEvent]:
        """Events with seq > ``after``."""
        return await self._io.read(
            f"read events of run {run_id!r} from",
            lambda cur: logs.read_events(cur, run_id, after, limit),
        )

    async def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """The state of one profile or namespace."""
        data: dict[StoreKey, Any] = {}
        await self._io.read(
            f"read {scope.value} state of {owner!r} from",
            lambda cur: load_scope(cur, scope, owner, data),
        )
        return {k: v for (_s, k), v in data.items()}

    async def write_scope(self, scope: Scope, owner: str, commands: Sequence[Command]) -> None:
        """Apply commands to one profile or namespace atomically."""

        def op(cur: sqlite3.Cursor) -> None:
            for command in commands:
                apply_command_sql(cur, scope, owner, command)

        await self._io.write(f"write {scope.value} state of {owner!r} to", op)

    async def publish_config(
        self, config: Mapping[str, Any] | BaseModel, *, note: str = ""
    ) -> ConfigVersion:
        """Store a new config version."""
        agent_id, data = config_dict(config)
        return await self._io.write(
            f"publish config of agent {agent_id!r} to",
            lambda cur: logs.insert_config(cur, agent_id, data, note),
        )

    async def config_history(self, agent_id: str) -> list[ConfigVersion]:
        """Kept versions, oldest first."""
        return await self._io.read(
            f"read configs of agent {agent_id!r} from",
            lambda cur: logs.config_history(cur, agent_id),
        )

    async def get_config(self, agent_id: str, version: int | None = None) -> ConfigVersion:
        """The latest (or a given) config version."""
        return find_config(await self.config_history(agent_id), agent_id, version)

    async def rollback_config(self, agent_id: str, version: int) -> ConfigVersion:
        """Republish ``version`` as the newest version."""
        old = await self.get_config(agent_id, version)
        return await self.publish_config(old.config, note=f"rollback to version {version}")

    # -- leases, retention ------------------------------------------------------------

    async def acquire_lease(self, thread_id: str, holder: str, ttl: float) -> Lease:
        """Take the thread (stealing an expired lease) or raise ``ThreadBusy``."""
        return await self._io.write(
            f"lease thread {thread_id!r} in",
            lambda cur: leases.acquire_lease(cur, thread_id, holder, ttl),
        )

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a held lease or raise ``LeaseLost``."""
        renewed = lease.model_copy(update={"expires_at": time.time() + ttl})
        changed = await self._io.write(
            f"renew the lease on thread {lease.thread_id!r} in",
            lambda cur: leases.renew_lease(cur, renewed),
        )
        if not changed:
            raise LeaseLost(
                f"the lease of {lease.holder!r} on thread {lease.thread_id!r} expired and the "
                f"thread was taken by another run; this run must stop"
            )
        return renewed

    async def release_lease(self, lease: Lease) -> None:
        """Give the thread up (no-op if it was taken)."""
        await self._io.write(
            f"release the lease on thread {lease.thread_id!r} in",
            lambda cur: leases.release_lease(cur, lease),
        )

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """Remove event logs of ended runs, superseded run records and config versions."""
        cut = cutoff(older_than)
        return await self._io.write("prune", lambda cur: retention.prune(cur, cut))

    def _run(self, cur: sqlite3.Cursor, run_id: str) -> RunRecord | None:
        row = cur.execute("SELECT body FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return decode_one(self.path, f"run {run_id!r}", RunRecord, row[0]) if row else None

    async def close(self) -> None:
        """Close the connection (after every operation already started)."""
        await self._io.close()
