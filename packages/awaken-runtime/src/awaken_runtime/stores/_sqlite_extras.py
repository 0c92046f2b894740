"""SQL of the SQLite store's event logs, configs, leases and retention.

Each function runs inside a transaction the store opened (``SQLiteStore._tx``)
and is given only its cursor; the store's port methods name the transaction
(for error messages) and call these.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..suspension._suspension import ThreadBusy
from ._core import check_event_seqs
from ._ports import Lease
from ._records import ConfigVersion, PruneReport, StreamEvent

__all__ = [
    "acquire_lease",
    "append_events",
    "config_history",
    "insert_config",
    "prune",
    "read_events",
    "release_lease",
    "renew_lease",
]


def append_events(cur: sqlite3.Cursor, run_id: str, events: Sequence[StreamEvent]) -> None:
    """Append to the run's event log; raise ``ValueError`` unless seqs strictly increase."""
    last = cur.execute("SELECT max(seq) FROM events WHERE run_id=?", (run_id,)).fetchone()
    check_event_seqs(run_id, last[0] or 0, events)
    cur.executemany(
        "INSERT INTO events VALUES (?, ?, ?, ?)",
        [(run_id, e.seq, e.at.timestamp(), e.model_dump_json()) for e in events],
    )


def read_events(cur: sqlite3.Cursor, run_id: str, after: int, limit: int) -> list[StreamEvent]:
    """Up to ``limit`` events of the run with seq > ``after``."""
    rows = cur.execute(
        "SELECT body FROM events WHERE run_id=? AND seq>? ORDER BY seq LIMIT ?",
        (run_id, after, limit),
    ).fetchall()
    return [StreamEvent.model_validate_json(r[0]) for r in rows]


def insert_config(
    cur: sqlite3.Cursor, agent_id: str, data: dict[str, Any], note: str
) -> ConfigVersion:
    """Store ``data`` as the agent's next config version."""
    row = cur.execute("SELECT max(version) FROM configs WHERE agent_id=?", (agent_id,)).fetchone()
    version = ConfigVersion(agent_id=agent_id, version=(row[0] or 0) + 1, config=data, note=note)
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


def config_history(cur: sqlite3.Cursor, agent_id: str) -> list[ConfigVersion]:
    """The agent's kept config versions, oldest first."""
    rows = cur.execute(
        "SELECT body FROM configs WHERE agent_id=? ORDER BY version", (agent_id,)
    ).fetchall()
    return [ConfigVersion.model_validate_json(r[0]) for r in rows]


def acquire_lease(cur: sqlite3.Cursor, thread_id: str, holder: str, ttl: float) -> Lease:
    """Take the thread (stealing an expired lease) or raise ``ThreadBusy``."""
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


def renew_lease(cur: sqlite3.Cursor, renewed: Lease) -> bool:
    """Store the new expiry of a held lease; False if its token no longer holds the thread."""
    changed = cur.execute(
        "UPDATE leases SET expires_at=? WHERE thread_id=? AND token=?",
        (renewed.expires_at, renewed.thread_id, renewed.token),
    ).rowcount
    return bool(changed)


def release_lease(cur: sqlite3.Cursor, lease: Lease) -> None:
    """Delete the lease if its token still holds the thread."""
    cur.execute("DELETE FROM leases WHERE thread_id=? AND token=?", (lease.thread_id, lease.token))


def prune(cur: sqlite3.Cursor, cut: datetime) -> PruneReport:
    """Delete event logs of ended runs, superseded run records and config versions."""
    at = cut.timestamp()
    report = PruneReport()
    old = "SELECT run_id FROM runs WHERE phase='ended' AND updated_at < ?"
    report.events = cur.execute(f"DELETE FROM events WHERE run_id IN ({old})", (at,)).rowcount
    report.events += cur.execute(
        "DELETE FROM events WHERE run_id NOT IN (SELECT run_id FROM runs) AND run_id IN "
        "(SELECT run_id FROM events GROUP BY run_id HAVING max(at) < ?)",
        (at,),
    ).rowcount
    report.runs = cur.execute(
        "DELETE FROM runs WHERE phase='ended' AND updated_at < ? AND run_id NOT IN "
        "(SELECT latest_run FROM threads WHERE latest_run IS NOT NULL)",
        (at,),
    ).rowcount
    report.configs = cur.execute(
        "DELETE FROM configs WHERE published_at < ? AND version < "
        "(SELECT max(version) FROM configs AS c WHERE c.agent_id = configs.agent_id)",
        (at,),
    ).rowcount
    return report
