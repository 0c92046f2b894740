"""SQL of the SQLite store's retention pass (``SQLiteStore.prune``).

It runs inside a transaction the store opened and is given only its cursor.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from .._records import PruneReport

__all__ = ["prune"]


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
