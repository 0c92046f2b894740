"""Field-wise state in SQLite: a stored object is one row per field.

An object value is stored one row per field in ``state_fields`` (the
``state`` row has kind ``o``); any other value is one JSON row (kind ``v``).
A COMMUTATIVE merge into a stored object upserts only the merged fields, so
merging 1 field into a 100,000-field object writes 1 row. Row order (rowid)
is the dict's key order, as ``dict.update`` would leave it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...state._engine import Command, MergePolicy, Remove, Scope, StoreKey

__all__ = ["apply_command_sql", "dumps", "load_scope"]


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
