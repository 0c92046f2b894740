"""Field-wise scoped state in SQL: apply a command, load a scope.

No statement here reads a result, so a commit can send them all in one
pipeline round trip.

An object value is one ``state`` row of kind ``o`` plus one ``state_fields``
row per field; any other value is one ``state`` row of kind ``v`` holding
its JSON. A COMMUTATIVE merge into a stored object upserts only the merged
fields, so merging 1 field into a 100,000-field object writes 1 row. The
identity column ``ord`` keeps first-insert order, which is the key order
``dict.update`` leaves (an updated key keeps its place).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import psycopg

from awaken_runtime import Command, MergePolicy, Remove, Scope

__all__ = ["Conn", "apply_command", "dumps", "load_scopes"]

Conn = psycopg.AsyncConnection[tuple[Any, ...]]


def dumps(value: Any) -> str:
    """Compact JSON text (NUL and other control characters are escaped, as text needs)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_DROP_FIELDS = "DELETE FROM state_fields WHERE scope=%(s)s AND owner=%(o)s AND key=%(k)s"

_REMOVE = (
    f"WITH f AS ({_DROP_FIELDS}) DELETE FROM state WHERE scope=%(s)s AND owner=%(o)s AND key=%(k)s"
)

# Replace whatever is stored with a plain value or an empty object head, in one statement.
_PUT = (
    f"WITH f AS ({_DROP_FIELDS}) "
    "INSERT INTO state (scope, owner, key, kind, value) "
    "VALUES (%(s)s, %(o)s, %(k)s, %(kind)s, %(v)s) "
    "ON CONFLICT (scope, owner, key) DO UPDATE SET kind=excluded.kind, value=excluded.value"
)

# Make the key an object head, keeping its fields if it already is one (a COMMUTATIVE merge).
# Fields exist only under an object head, so a plain value or a missing key has none to drop.
_HEAD = (
    "INSERT INTO state AS st (scope, owner, key, kind, value) "
    "VALUES (%(s)s, %(o)s, %(k)s, 'o', NULL) "
    "ON CONFLICT (scope, owner, key) DO UPDATE SET kind='o', value=NULL WHERE st.kind <> 'o'"
)

_FIELDS = (
    "INSERT INTO state_fields (scope, owner, key, field, value) "
    "SELECT %(s)s, %(o)s, %(k)s, f, v FROM unnest(%(fs)b::bytea[], %(vs)b::text[]) "
    "WITH ORDINALITY AS x(f, v, n) ORDER BY n "
    "ON CONFLICT (scope, owner, key, field) DO UPDATE SET value=excluded.value"
)


async def apply_command(conn: Conn, scope: Scope, owner: str, command: Command) -> None:
    """Apply ``command`` to ``(scope, owner)`` with the semantics of ``apply_command``."""
    args: dict[str, Any] = {"s": scope.value, "o": owner, "k": command.key.encode()}
    action = command.action
    if isinstance(action, Remove):
        await conn.execute(_REMOVE, args)
        return
    value = action.value
    if not isinstance(value, dict):
        await conn.execute(_PUT, {**args, "kind": "v", "v": dumps(value)})
        return
    if command.merge is MergePolicy.COMMUTATIVE:
        await conn.execute(_HEAD, args)
    else:
        await conn.execute(_PUT, {**args, "kind": "o", "v": None})
    await _put_fields(conn, args, value)


async def _put_fields(conn: Conn, args: dict[str, Any], fields: dict[str, Any]) -> None:
    if fields:
        names = [str(f).encode() for f in fields]
        await conn.execute(
            _FIELDS, {**args, "fs": names, "vs": [dumps(v) for v in fields.values()]}
        )


async def load_scopes(
    conn: Conn, owners: Iterable[tuple[Scope, str]], into: dict[Any, Any]
) -> None:
    """Read the state of every ``(scope, owner)`` into ``into``, keyed ``(scope, key)``."""
    pairs = list(owners)
    scopes = [s.value for s, _o in pairs]
    names = [o for _s, o in pairs]
    match = "(scope, owner) IN (SELECT * FROM unnest(%b::text[], %b::text[]))"
    cur = await conn.execute(
        f"SELECT scope, key, kind, value FROM state WHERE {match} ORDER BY ord", (scopes, names)
    )
    objects: dict[tuple[str, bytes], dict[str, Any]] = {}
    for scope, key, kind, value in await cur.fetchall():
        slot = (Scope(scope), bytes(key).decode())
        if kind == "o":
            objects[(scope, bytes(key))] = into[slot] = {}
        else:
            into[slot] = json.loads(value)
    if not objects:
        return
    cur = await conn.execute(
        f"SELECT scope, key, field, value FROM state_fields WHERE {match} ORDER BY ord",
        (scopes, names),
    )
    for scope, key, name, value in await cur.fetchall():
        target = objects.get((scope, bytes(key)))
        if target is not None:
            target[bytes(name).decode()] = json.loads(value)
