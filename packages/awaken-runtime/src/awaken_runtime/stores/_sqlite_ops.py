"""SQL for the hot paths of the SQLite store: thread commits and field-wise state.

An object value is stored one row per field in ``state_fields`` (the
``state`` row has kind ``o``); any other value is one JSON row (kind ``v``).
A COMMUTATIVE merge into a stored object upserts only the merged fields, so
merging 1 field into a 100,000-field object writes 1 row. Row order (rowid)
is the dict's key order, as ``dict.update`` would leave it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ..messages._message import Message
from ..state._engine import Command, CommittedBatch, MergePolicy, Remove, Scope, StoreKey
from ._core import check_messages
from ._sqlite_chunks import seal
from ._thread_store import RunRecord, ScopeBinding

__all__ = ["apply_command_sql", "delete_thread_sql", "dumps", "insert_commit", "load_scope"]


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` (unicode kept as is)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def apply_command_sql(cur: sqlite3.Cursor, scope: Scope, owner: str, command: Command) -> None:
    """Apply ``command`` to ``(scope, owner)`` with the semantics of ``apply_command``."""
    s, key = scope.value, command.key
    action = command.action
    if isinstance(action, Remove):
        cur.execute("DELETE FROM state WHERE scope=? AND owner=? AND key=?", (s, owner, key))
        cur.execute("DELETE FROM state_fields WHERE scope=? AND owner=? AND key=?", (s, owner, key))
        return
    value = action.value
    if isinstance(value, dict):
        if command.merge is MergePolicy.COMMUTATIVE:
            row = cur.execute(
                "SELECT kind FROM state WHERE scope=? AND owner=? AND key=?", (s, owner, key)
            ).fetchone()
            if row is not None and row[0] == "o":
                _upsert_fields(cur, s, owner, key, value)
                return
        cur.execute("DELETE FROM state_fields WHERE scope=? AND owner=? AND key=?", (s, owner, key))
        _upsert_key(cur, s, owner, key, "o", None)
        _upsert_fields(cur, s, owner, key, value)
        return
    cur.execute("DELETE FROM state_fields WHERE scope=? AND owner=? AND key=?", (s, owner, key))
    _upsert_key(cur, s, owner, key, "v", dumps(value))


def _upsert_key(
    cur: sqlite3.Cursor, scope: str, owner: str, key: str, kind: str, value: str | None
) -> None:
    cur.execute(
        "INSERT INTO state (scope, owner, key, kind, value) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (scope, owner, key) DO UPDATE SET kind=excluded.kind, value=excluded.value",
        (scope, owner, key, kind, value),
    )


def _upsert_fields(
    cur: sqlite3.Cursor, scope: str, owner: str, key: str, fields: dict[str, Any]
) -> None:
    if not fields:
        return
    cur.executemany(
        "INSERT INTO state_fields (scope, owner, key, field, value) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (scope, owner, key, field) DO UPDATE SET value=excluded.value",
        [(scope, owner, key, str(f), dumps(v)) for f, v in fields.items()],
    )


def load_scope(cur: sqlite3.Cursor, scope: Scope, owner: str, into: dict[StoreKey, Any]) -> None:
    """Read the state of ``(scope, owner)`` into ``into`` (keyed ``(scope, key)``)."""
    s = scope.value
    objects: dict[str, dict[str, Any]] = {}
    for key, kind, value in cur.execute(
        "SELECT key, kind, value FROM state WHERE scope=? AND owner=? ORDER BY rowid", (s, owner)
    ):
        if kind == "o":
            objects[key] = into[(scope, key)] = {}
        else:
            into[(scope, key)] = json.loads(value)
    if objects:
        for key, name, value in cur.execute(
            "SELECT key, field, value FROM state_fields WHERE scope=? AND owner=? ORDER BY rowid",
            (s, owner),
        ):
            target = objects.get(key)
            if target is not None:
                target[name] = json.loads(value)


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
