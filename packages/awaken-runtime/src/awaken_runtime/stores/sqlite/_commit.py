"""SQL of a thread commit (the hot path) and of deleting a thread.

A commit checks its messages against the stored thread (``_rules.check_messages``
over indexed lookups), inserts the message rows (sealing a chunk when one is
due, ``_chunks.py``), applies the batches' commands field-wise
(``_state.py``), stores the run record and moves the thread's version on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...messages._message import Message
from ...state._engine import CommittedBatch
from .._rules import check_messages
from .._thread_store import RunRecord, ScopeBinding
from ._chunks import seal
from ._state import apply_command_sql

__all__ = ["delete_thread_sql", "insert_commit"]


def insert_commit(
    cur: sqlite3.Cursor,
    binding: ScopeBinding,
    base: tuple[int, int],
    messages: Sequence[Message],
    batches: Sequence[CommittedBatch],
    record: RunRecord | None,
) -> None:
    """Validate and insert messages, batches, state and the run record (in a transaction).

    ``base`` is ``(message count, batch count)`` of the stored thread.
    """
    tid = binding.thread_id
    if messages:
        check_messages(
            tid,
            messages,
            lambda mid: _exists(cur, "messages", "msg_id", tid, mid),
            lambda cid: _exists(cur, "tool_calls", "call_id", tid, cid),
        )
        n = base[0]
        bodies = [m.model_dump_json(exclude_defaults=True) for m in messages]
        cur.executemany(
            "INSERT INTO messages (thread_id, seq, msg_id, body) VALUES (?, ?, ?, ?)",
            [
                (tid, n + i, m.id, body)
                for i, (m, body) in enumerate(zip(messages, bodies, strict=True), 1)
            ],
        )
        seal(cur, tid, n + len(bodies), bodies)
        calls = [(tid, c.id) for m in messages for c in m.tool_calls or ()]
        if calls:
            cur.executemany("INSERT OR IGNORE INTO tool_calls VALUES (?, ?)", calls)
    if batches:
        n = base[1]
        cur.executemany(
            "INSERT INTO batches (thread_id, seq, body) VALUES (?, ?, ?)",
            [(tid, n + i, b.model_dump_json()) for i, b in enumerate(batches, 1)],
        )
        for batch in batches:
            for _producer, command in batch.entries:
                apply_command_sql(cur, command.scope, binding.owner(command.scope), command)
    if record is not None:
        cur.execute(
            "INSERT INTO runs (run_id, thread_id, phase, body, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (run_id) DO UPDATE SET phase=excluded.phase, body=excluded.body, "
            "updated_at=excluded.updated_at",
            (
                record.run_id,
                tid,
                record.phase.value,
                record.model_dump_json(),
                record.updated_at.timestamp(),
            ),
        )


def _exists(cur: sqlite3.Cursor, table: str, column: str, tid: str, value: str) -> bool:
    sql = f"SELECT 1 FROM {table} WHERE thread_id=? AND {column}=?"
    return cur.execute(sql, (tid, value)).fetchone() is not None


def delete_thread_sql(cur: sqlite3.Cursor, thread_id: str) -> bool:
    """Delete a thread's rows, its runs and their events; whether the thread existed."""
    t = (thread_id,)
    found = cur.execute("DELETE FROM threads WHERE thread_id=?", t).rowcount > 0
    # Chunks first: the message rows' delete trigger then finds none left to drop.
    for table in ("message_chunks", "messages", "tool_calls", "batches", "leases"):
        cur.execute(f"DELETE FROM {table} WHERE thread_id=?", t)
    for table in ("state", "state_fields"):
        cur.execute(f"DELETE FROM {table} WHERE scope='thread' AND owner=?", t)
    cur.execute("DELETE FROM events WHERE run_id IN (SELECT run_id FROM runs WHERE thread_id=?)", t)
    cur.execute("DELETE FROM runs WHERE thread_id=?", t)
    return found
