"""``PostgresStore``: every store port on PostgreSQL, for many workers on many machines."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Self

from psycopg.errors import UniqueViolation

from awaken_runtime import (
    CommittedBatch,
    Message,
    ParkedRun,
    RunRecord,
    Scope,
    ScopeBinding,
    ThreadSnapshot,
)
from awaken_runtime.stores import (
    DuplicateMessageId,
    Lease,
    Page,
    StoreIOError,
    ThreadInfo,
    decode_message_rows,
    decode_stored_row,
)

from ._commit import commit_thread, duplicate_id, stored_run
from ._extras import PostgresExtras
from ._load import MessageCache
from ._pool import Database
from ._state_sql import load_scopes

__all__ = ["PostgresStore"]

_BY_ID = "messages_by_id"  # the unique index on (thread_id, msg_id)


class PostgresStore(PostgresExtras):
    """A full store in one PostgreSQL schema, over a psycopg 3 async connection pool.

    The constructor does no I/O (so a ``functools.partial`` of it can open the
    store in another process); the pool opens and the schema is created or
    migrated on :meth:`open` or the first call. ``migrate=False`` only checks
    the schema and refuses a missing or older one as well as a newer one.
    ``durable=False`` sets ``synchronous_commit=off`` for the store's sessions:
    COMMIT does not wait for the WAL flush, so a server crash may lose the
    last commits (a killed worker loses nothing it committed); the default
    waits, as ``SQLiteStore(durable=True)`` does.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "awaken",
        lease_ttl: float = 30.0,
        min_size: int = 1,
        max_size: int = 4,
        migrate: bool = True,
        durable: bool = True,
    ) -> None:
        self.db = Database(
            dsn, schema, min_size=min_size, max_size=max_size, migrate=migrate, durable=durable
        )
        self.lease_ttl = lease_ttl
        """Seconds a run's lease on a thread lives without renewal."""
        self._messages = MessageCache()

    async def open(self) -> Self:
        """Open the pool and apply pending migrations; raises ``PostgresSchemaError`` if newer."""
        await self.db.open()
        return self

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- ThreadStore ------------------------------------------------------------------

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """The thread, its latest run and its profile and shared state, from one snapshot."""
        tid = binding.thread_id
        async with self.db.tx(f"load thread {tid!r} from", write=False, pipeline=True) as conn:
            loaded = await self._messages.fetch(conn, tid)
            state: dict[Any, Any] = {}
            owners = [
                (Scope.THREAD, tid),
                (Scope.PROFILE, binding.profile_id),
                (Scope.SHARED, binding.namespace),
            ]
            await load_scopes(conn, owners if loaded is not None else owners[1:], state)
        if loaded is None:
            return ThreadSnapshot(tid, [], state, 0)
        where = self.db.where
        messages, call_ids = self._messages.decode(where, tid, loaded)
        parked = None
        if loaded.parked:
            parked = decode_stored_row(
                where, f"thread {tid!r} parked run", ParkedRun, loaded.parked
            )
        run = None
        if loaded.run:
            what = f"thread {tid!r} latest run {loaded.run_id!r} record"
            run = decode_stored_row(where, what, RunRecord, loaded.run)
        return ThreadSnapshot(tid, messages, state, loaded.version, parked, run, call_ids)

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
        (given ``lease``, only while that lease still holds the thread: ``LeaseFenced``)."""
        tid = binding.thread_id
        try:
            async with self.db.tx(f"commit thread {tid!r} to", thread_id=tid, pipeline=True) as c:
                return await commit_thread(
                    c,
                    self.db.where,
                    binding,
                    expected_version,
                    messages,
                    batches,
                    run_record,
                    parked,
                    lease,
                )
        except StoreIOError as exc:
            cause = exc.__cause__
            if not isinstance(cause, UniqueViolation) or cause.diag.constraint_name != _BY_ID:
                raise
            async with self.db.tx(f"check message ids of thread {tid!r} in", write=False) as c:
                taken = await duplicate_id(c, tid, messages)
            if taken is None:  # the clashing message was deleted meanwhile: report the original
                raise
            raise DuplicateMessageId(tid, taken) from None

    # -- reads, runs, threads ---------------------------------------------------------

    async def _page(self, table: str, thread_id: str, after: int, limit: int) -> list[str]:
        async with self.db.tx(f"read {table} of thread {thread_id!r} from", write=False) as conn:
            cur = await conn.execute(
                f"SELECT body FROM {table} WHERE thread_id=%s AND seq>%s ORDER BY seq LIMIT %s",
                (thread_id, after, limit + 1),
            )
            return [r[0] for r in await cur.fetchall()]

    async def read_messages(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[Message]:
        """Messages with seq > ``after`` (seq is the 1-based position in the thread)."""
        after = max(after, 0)
        bodies = await self._page("messages", thread_id, after, limit)
        what = f"thread {thread_id!r} message"
        items = decode_message_rows(self.db.where, what, bodies[:limit], after + 1)
        return Page(items, after + len(items), len(bodies) > limit)

    async def read_batches(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[CommittedBatch]:
        """Persisted batches with seq > ``after``, in commit order."""
        after = max(after, 0)
        bodies = await self._page("batches", thread_id, after, limit)
        what = f"thread {thread_id!r} batch row"
        items = [
            decode_stored_row(self.db.where, f"{what} {after + i}", CommittedBatch, b)
            for i, b in enumerate(bodies[:limit], 1)
        ]
        return Page(items, after + len(items), len(bodies) > limit)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The latest record of ``run_id``, or ``None``."""
        async with self.db.tx("read a run from", write=False) as conn:
            return await stored_run(conn, self.db.where, run_id)

    async def list_runs(self, thread_id: str) -> list[RunRecord]:
        """A thread's run records, oldest first."""
        async with self.db.tx(f"list runs of thread {thread_id!r} in", write=False) as conn:
            cur = await conn.execute(
                "SELECT run_id, body FROM runs WHERE thread_id=%s ORDER BY ord", (thread_id,)
            )
            rows = await cur.fetchall()
        return [
            decode_stored_row(
                self.db.where, f"thread {thread_id!r} run {run_id!r} record", RunRecord, body
            )
            for run_id, body in rows
        ]

    async def list_threads(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        parked: bool | None = None,
        updated_after: datetime | None = None,
    ) -> list[ThreadInfo]:
        """Threads ordered by id (code points) after ``after``; filters are ANDed."""
        where, args = ["thread_id > %s"], [after or ""]
        if parked is not None:
            where.append("parked IS NOT NULL" if parked else "parked IS NULL")
        if updated_after is not None:
            where.append("updated_at > %s")
            args.append(updated_after.timestamp())  # type: ignore[arg-type]
        query = (
            "SELECT thread_id, version, n_messages, updated_at, parked IS NOT NULL, latest_run "
            f"FROM threads WHERE {' AND '.join(where)} ORDER BY thread_id LIMIT %s"
        )
        async with self.db.tx("list threads in", write=False) as conn:
            cur = await conn.execute(query.encode(), (*args, limit))
            rows = await cur.fetchall()
        return [
            ThreadInfo(
                thread_id=r[0],
                version=r[1],
                messages=r[2],
                updated_at=datetime.fromtimestamp(r[3], UTC),
                parked=r[4],
                latest_run_id=r[5],
            )
            for r in rows
        ]

    async def delete_thread(self, thread_id: str) -> bool:
        """Remove a thread with its messages, state, runs, their events and its lease."""
        t = (thread_id,)
        async with self.db.tx(f"delete thread {thread_id!r} from") as conn:
            cur = await conn.execute("DELETE FROM threads WHERE thread_id=%s", t)
            found = cur.rowcount > 0
            for table in ("messages", "tool_calls", "batches", "leases"):
                await conn.execute(f"DELETE FROM {table} WHERE thread_id=%s".encode(), t)
            for table in ("state", "state_fields"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE scope='thread' AND owner=%s".encode(), t
                )
            await conn.execute(
                "DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE thread_id=%s)", t
            )
            await conn.execute("DELETE FROM runs WHERE thread_id=%s", t)
        self._messages.forget(thread_id)
        return found

    async def close(self) -> None:
        """Close the pool's connections."""
        await self.db.close()
