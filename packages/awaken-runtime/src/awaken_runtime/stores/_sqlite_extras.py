"""The SQLite backend's event logs, scoped state, configs, leases and retention."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..state._engine import Command, Scope, StoreKey
from ..suspension._suspension import ThreadBusy
from ._errors import LeaseLost
from ._memory import config_dict, find_config
from ._ports import ConfigVersion, Lease, PruneReport, StreamEvent, cutoff
from ._sqlite_ops import apply_command_sql, load_scope

__all__ = ["SQLiteExtras"]


class SQLiteExtras:
    """Mixin of :class:`SQLiteStore`: everything besides thread commits and reads."""

    if TYPE_CHECKING:

        def _tx(
            self, action: str, *, write: bool = True
        ) -> AbstractContextManager[sqlite3.Cursor]: ...

    # -- events, scopes, configs ----------------------------------------------------------

    async def append_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Append to the run's event log (seqs must increase)."""
        with self._tx(f"append events of run {run_id!r} to") as cur:
            last = cur.execute("SELECT max(seq) FROM events WHERE run_id=?", (run_id,)).fetchone()
            seq = last[0] or 0
            for event in events:
                if event.seq <= seq:
                    raise ValueError(
                        f"run {run_id!r}: event seq {event.seq} is not after seq {seq}; "
                        f"stream event seqs must strictly increase"
                    )
                seq = event.seq
            cur.executemany(
                "INSERT INTO events VALUES (?, ?, ?, ?)",
                [(run_id, e.seq, e.at.timestamp(), e.model_dump_json()) for e in events],
            )

    async def read_events(
        self, run_id: str, after: int = 0, limit: int = 1000
    ) -> list[StreamEvent]:
        """Events with seq > ``after``."""
        with self._tx(f"read events of run {run_id!r} from", write=False) as cur:
            rows = cur.execute(
                "SELECT body FROM events WHERE run_id=? AND seq>? ORDER BY seq LIMIT ?",
                (run_id, after, limit),
            ).fetchall()
        return [StreamEvent.model_validate_json(r[0]) for r in rows]

    async def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """The state of one profile or namespace."""
        data: dict[StoreKey, Any] = {}
        with self._tx(f"read {scope.value} state of {owner!r} from", write=False) as cur:
            load_scope(cur, scope, owner, data)
        return {k: v for (_s, k), v in data.items()}

    async def write_scope(self, scope: Scope, owner: str, commands: Sequence[Command]) -> None:
        """Apply commands to one profile or namespace atomically."""
        with self._tx(f"write {scope.value} state of {owner!r} to") as cur:
            for command in commands:
                apply_command_sql(cur, scope, owner, command)

    async def publish_config(
        self, config: Mapping[str, Any] | BaseModel, *, note: str = ""
    ) -> ConfigVersion:
        """Store a new config version."""
        agent_id, data = config_dict(config)
        with self._tx(f"publish config of agent {agent_id!r} to") as cur:
            row = cur.execute(
                "SELECT max(version) FROM configs WHERE agent_id=?", (agent_id,)
            ).fetchone()
            version = ConfigVersion(
                agent_id=agent_id, version=(row[0] or 0) + 1, config=data, note=note
            )
            cur.execute(
                "INSERT INTO configs VALUES (?, ?, ?, ?, ?)",
                (
                    agent_id,
                    version.version,
                    version.published_at.timestamp(),
                    note,
                    version.model_dump_json(),
                ),
            )
        return version

    async def config_history(self, agent_id: str) -> list[ConfigVersion]:
        """Kept versions, oldest first."""
        with self._tx(f"read configs of agent {agent_id!r} from", write=False) as cur:
            rows = cur.execute(
                "SELECT body FROM configs WHERE agent_id=? ORDER BY version", (agent_id,)
            ).fetchall()
        return [ConfigVersion.model_validate_json(r[0]) for r in rows]

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
        with self._tx(f"lease thread {thread_id!r} in") as cur:
            now = time.time()
            row = cur.execute(
                "SELECT holder, expires_at FROM leases WHERE thread_id=?", (thread_id,)
            ).fetchone()
            if row is not None and row[1] > now and row[0] != holder:
                raise ThreadBusy(
                    f"thread {thread_id!r} has an active run (lease held by {row[0]!r} for "
                    f"{row[1] - now:.1f}s more); wait for it to end, or cancel it"
                )
            lease = Lease(
                thread_id=thread_id, holder=holder, token=os.urandom(8).hex(), expires_at=now + ttl
            )
            cur.execute(
                "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?)",
                (thread_id, holder, lease.token, lease.expires_at),
            )
        return lease

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a held lease or raise ``LeaseLost``."""
        renewed = lease.model_copy(update={"expires_at": time.time() + ttl})
        with self._tx(f"renew the lease on thread {lease.thread_id!r} in") as cur:
            changed = cur.execute(
                "UPDATE leases SET expires_at=? WHERE thread_id=? AND token=?",
                (renewed.expires_at, lease.thread_id, lease.token),
            ).rowcount
        if not changed:
            raise LeaseLost(
                f"the lease of {lease.holder!r} on thread {lease.thread_id!r} expired and the "
                f"thread was taken by another run; this run must stop"
            )
        return renewed

    async def release_lease(self, lease: Lease) -> None:
        """Give the thread up (no-op if it was taken)."""
        with self._tx(f"release the lease on thread {lease.thread_id!r} in") as cur:
            cur.execute(
                "DELETE FROM leases WHERE thread_id=? AND token=?", (lease.thread_id, lease.token)
            )

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """Remove event logs of ended runs, superseded run records and config versions."""
        cut = cutoff(older_than).timestamp()
        report = PruneReport()
        with self._tx("prune") as cur:
            old = "SELECT run_id FROM runs WHERE phase='ended' AND updated_at < ?"
            report.events = cur.execute(
                f"DELETE FROM events WHERE run_id IN ({old})", (cut,)
            ).rowcount
            report.events += cur.execute(
                "DELETE FROM events WHERE run_id NOT IN (SELECT run_id FROM runs) AND run_id IN "
                "(SELECT run_id FROM events GROUP BY run_id HAVING max(at) < ?)",
                (cut,),
            ).rowcount
            report.runs = cur.execute(
                "DELETE FROM runs WHERE phase='ended' AND updated_at < ? AND run_id NOT IN "
                "(SELECT latest_run FROM threads WHERE latest_run IS NOT NULL)",
                (cut,),
            ).rowcount
            report.configs = cur.execute(
                "DELETE FROM configs WHERE published_at < ? AND version < "
                "(SELECT max(version) FROM configs AS c WHERE c.agent_id = configs.agent_id)",
                (cut,),
            ).rowcount
        return report
