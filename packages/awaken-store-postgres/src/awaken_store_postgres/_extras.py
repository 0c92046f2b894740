"""Event logs (with NOTIFY), scoped state, configs, row leases and retention."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from pydantic import BaseModel

from awaken_runtime import Command, Scope, ThreadBusy
from awaken_runtime.stores import (
    ConfigVersion,
    Lease,
    LeaseLost,
    PruneReport,
    StreamEvent,
    decode_stored_row,
)

from ._rules import config_data, pick_config
from ._state_sql import apply_command, load_scopes
from ._tail import CHANNEL, notify_key, tail

if TYPE_CHECKING:
    from ._pool import Database

__all__ = ["PostgresExtras"]

_NOW = "extract(epoch FROM clock_timestamp())"

# Take the row unless a live lease of another holder is on it; the database's clock decides.
_ACQUIRE = (
    "INSERT INTO leases AS l VALUES (%(t)s, %(h)s, %(k)s, " + _NOW + " + %(ttl)s) "
    "ON CONFLICT (thread_id) DO UPDATE SET holder=excluded.holder, token=excluded.token, "
    "expires_at=excluded.expires_at WHERE l.expires_at <= "
    + _NOW
    + " OR l.holder = excluded.holder "
    "RETURNING expires_at"
)


class PostgresExtras:
    """Mixin of :class:`PostgresStore`: everything besides thread commits and reads."""

    db: Database

    # -- events ----------------------------------------------------------------------

    async def append_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Append to the run's event log (seqs must increase) and notify its tailers."""
        if not events:
            return
        async with self.db.tx(f"append events of run {run_id!r} to") as conn:
            # Lock the run's log: two appenders of one run cannot interleave seqs.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("ev:" + run_id,))
            cur = await conn.execute("SELECT max(seq) FROM events WHERE run_id=%s", (run_id,))
            row = await cur.fetchone()
            seq = int(row[0]) if row is not None and row[0] is not None else 0
            for event in events:
                if event.seq <= seq:
                    raise ValueError(
                        f"run {run_id!r}: event seq {event.seq} is not after seq {seq}; "
                        f"stream event seqs must strictly increase"
                    )
                seq = event.seq
            async with conn.cursor() as c:
                await c.executemany(
                    "INSERT INTO events VALUES (%s, %s, %s, %s)",
                    [(run_id, e.seq, e.at.timestamp(), e.model_dump_json()) for e in events],
                )
            # Delivered at COMMIT, to every listening process on any machine.
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, notify_key(self.db, run_id)))

    async def read_events(
        self, run_id: str, after: int = 0, limit: int = 1000
    ) -> list[StreamEvent]:
        """Events of ``run_id`` with seq > ``after``."""
        async with self.db.tx(f"read events of run {run_id!r} from", write=False) as conn:
            cur = await conn.execute(
                "SELECT seq, body FROM events WHERE run_id=%s AND seq>%s ORDER BY seq LIMIT %s",
                (run_id, after, limit),
            )
            rows = await cur.fetchall()
        # Named by the row's seq column (event seqs need not be 1, 2, 3...).
        return [
            decode_stored_row(self.db.where, f"run {run_id!r} event seq {seq}", StreamEvent, body)
            for seq, body in rows
        ]

    def tail_events(
        self, run_id: str, after: int = 0, *, until_finish: bool = True, idle: float = 5.0
    ) -> AsyncIterator[StreamEvent]:
        """Follow a run's event log live, from any process: events with seq > ``after``.

        Wakes on LISTEN/NOTIFY (re-reading every ``idle`` seconds as a safety
        net); ends after a ``run_finish`` event when ``until_finish``. A run that
        ended while its log did not (its writer died in between) has its log
        finished from the committed record after ``idle`` seconds without an
        append (``awaken_runtime.finish_event_log``), so this always returns for
        an ended run.
        """
        return tail(self.db, self.read_events, run_id, after, until_finish, idle, self._finish_log)

    async def _finish_log(self, run_id: str) -> bool:
        from awaken_runtime import finish_event_log  # loads the event models on first use

        return await finish_event_log(self, run_id)

    # -- scopes, configs ----------------------------------------------------------------

    async def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """Every key of ``scope`` owned by ``owner``."""
        data: dict[Any, Any] = {}
        async with self.db.tx(f"read {scope.value} state of {owner!r} from", write=False) as conn:
            await load_scopes(conn, [(scope, owner)], data)
        return {k: v for (_s, k), v in data.items()}

    async def write_scope(self, scope: Scope, owner: str, commands: Sequence[Command]) -> None:
        """Apply commands to one profile or namespace atomically."""
        async with self.db.tx(f"write {scope.value} state of {owner!r} to") as conn:
            for command in commands:
                await apply_command(conn, scope, owner, command)

    async def publish_config(
        self, config: Mapping[str, Any] | BaseModel, *, note: str = ""
    ) -> ConfigVersion:
        """Store the next version of the config's agent (concurrent publishers retry)."""
        agent_id, data = config_data(config)
        while True:
            try:
                async with self.db.tx(f"publish config of agent {agent_id!r} to") as conn:
                    cur = await conn.execute(
                        "SELECT coalesce(max(version), 0) FROM configs WHERE agent_id=%s",
                        (agent_id,),
                    )
                    row = await cur.fetchone()
                    version = ConfigVersion(
                        agent_id=agent_id,
                        version=int(row[0] if row else 0) + 1,
                        config=data,
                        note=note,
                    )
                    await conn.execute(
                        "INSERT INTO configs VALUES (%s, %s, %s, %s, %s)",
                        (
                            agent_id,
                            version.version,
                            version.published_at.timestamp(),
                            note,
                            version.model_dump_json(),
                        ),
                    )
                return version
            except Exception as exc:
                if not isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                    raise
                await asyncio.sleep(0)  # another publisher took this version number

    async def config_history(self, agent_id: str) -> list[ConfigVersion]:
        """Every kept version, oldest first."""
        async with self.db.tx(f"read configs of agent {agent_id!r} from", write=False) as conn:
            cur = await conn.execute(
                "SELECT version, body FROM configs WHERE agent_id=%s ORDER BY version", (agent_id,)
            )
            rows = await cur.fetchall()
        what = f"agent {agent_id!r} config version"
        return [
            decode_stored_row(self.db.where, f"{what} {version}", ConfigVersion, body)
            for version, body in rows
        ]

    async def get_config(self, agent_id: str, version: int | None = None) -> ConfigVersion:
        """The latest (or a given) version; raises ``ConfigNotFound``."""
        return pick_config(await self.config_history(agent_id), agent_id, version)

    async def rollback_config(self, agent_id: str, version: int) -> ConfigVersion:
        """Publish a copy of ``version`` as the newest version."""
        old = await self.get_config(agent_id, version)
        return await self.publish_config(old.config, note=f"rollback to version {version}")

    # -- leases, retention ------------------------------------------------------------

    async def acquire_lease(self, thread_id: str, holder: str, ttl: float) -> Lease:
        """Take the thread (stealing an expired lease) or raise ``ThreadBusy``."""
        token = os.urandom(8).hex()
        args = {"t": thread_id, "h": holder, "k": token, "ttl": ttl}
        async with self.db.tx(f"lease thread {thread_id!r} in") as conn:
            cur = await conn.execute(_ACQUIRE, args)
            row = await cur.fetchone()
            if row is None:
                cur = await conn.execute(
                    f"SELECT holder, expires_at - {_NOW} FROM leases WHERE thread_id=%s",
                    (thread_id,),
                )
                busy = await cur.fetchone()
                who, left = busy if busy is not None else ("?", 0.0)
                raise ThreadBusy(
                    f"thread {thread_id!r} has an active run (lease held by {who!r} for "
                    f"{left:.1f}s more); wait for it to end, or cancel it"
                )
        return Lease(thread_id=thread_id, holder=holder, token=token, expires_at=float(row[0]))

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a held lease or raise ``LeaseLost``."""
        async with self.db.tx(f"renew the lease on thread {lease.thread_id!r} in") as conn:
            cur = await conn.execute(
                f"UPDATE leases SET expires_at = {_NOW} + %s WHERE thread_id=%s AND token=%s "
                "RETURNING expires_at",
                (ttl, lease.thread_id, lease.token),
            )
            row = await cur.fetchone()
        if row is None:
            raise LeaseLost(
                f"the lease of {lease.holder!r} on thread {lease.thread_id!r} expired and the "
                f"thread was taken by another run; this run must stop"
            )
        return lease.model_copy(update={"expires_at": float(row[0])})

    async def release_lease(self, lease: Lease) -> None:
        """Give the thread up (a no-op if the lease was taken)."""
        async with self.db.tx(f"release the lease on thread {lease.thread_id!r} in") as conn:
            await conn.execute(
                "DELETE FROM leases WHERE thread_id=%s AND token=%s",
                (lease.thread_id, lease.token),
            )

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """Remove event logs of ended runs, superseded run records and config versions."""
        cut = (
            datetime.now().astimezone() - older_than
            if isinstance(older_than, timedelta)
            else older_than
        ).timestamp()
        report = PruneReport()
        old = "SELECT run_id FROM runs WHERE phase='ended' AND updated_at < %(c)s"
        async with self.db.tx("prune") as conn:
            cur = await conn.execute(f"DELETE FROM events WHERE run_id IN ({old})", {"c": cut})
            report.events = cur.rowcount
            cur = await conn.execute(
                "DELETE FROM events WHERE run_id NOT IN (SELECT run_id FROM runs) AND run_id IN "
                "(SELECT run_id FROM events GROUP BY run_id HAVING max(at) < %(c)s)",
                {"c": cut},
            )
            report.events += cur.rowcount
            cur = await conn.execute(
                "DELETE FROM runs WHERE phase='ended' AND updated_at < %(c)s AND run_id NOT IN "
                "(SELECT latest_run FROM threads WHERE latest_run IS NOT NULL)",
                {"c": cut},
            )
            report.runs = cur.rowcount
            cur = await conn.execute(
                "DELETE FROM configs WHERE published_at < %(c)s AND version < "
                "(SELECT max(version) FROM configs AS c WHERE c.agent_id = configs.agent_id)",
                {"c": cut},
            )
            report.configs = cur.rowcount
        return report
