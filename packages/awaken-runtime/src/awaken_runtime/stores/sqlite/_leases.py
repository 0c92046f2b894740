"""SQL of the SQLite store's leases: one row per held thread, taken and kept by token.

Each function runs inside a transaction the store opened (``SQLiteStore._tx``)
and is given only its cursor.
"""

from __future__ import annotations

import os
import sqlite3
import time

from ...suspension._suspension import ThreadBusy
from .._ports import Lease

__all__ = ["acquire_lease", "held", "release_lease", "renew_lease"]


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


def held(cur: sqlite3.Cursor, lease: Lease) -> bool:
    """Whether ``lease`` still holds its thread (read in the caller's transaction)."""
    row = cur.execute(
        "SELECT 1 FROM leases WHERE thread_id=? AND token=?", (lease.thread_id, lease.token)
    ).fetchone()
    return row is not None


def release_lease(cur: sqlite3.Cursor, lease: Lease) -> None:
    """Delete the lease if its token still holds the thread."""
    cur.execute("DELETE FROM leases WHERE thread_id=? AND token=?", (lease.thread_id, lease.token))
