"""SQL of the SQLite store's append-only logs: stream events per run, config versions per agent.

Each function runs inside a transaction the store opened (``SQLiteStore._tx``)
and is given only its cursor.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from .._records import ConfigVersion, StreamEvent
from .._rules import check_event_seqs

__all__ = ["append_events", "config_history", "insert_config", "read_events"]


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
