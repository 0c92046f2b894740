"""The Postgres schema, its forward migrations, and the version check run on open.

Every store lives in one PostgreSQL schema (``awaken`` by default), so one
database can hold several stores and each test its own. ``awaken_schema``
holds the version; ``MIGRATIONS[n]`` upgrades version ``n`` to ``n + 1``.
Migrations run in one transaction under a transaction-scoped advisory lock
(only for the migration itself: workers opening at once migrate once).

Identifiers that may hold any text (state keys and object fields) are
``bytea`` holding UTF-8: PostgreSQL ``text`` cannot hold NUL. JSON is stored
as ``text``, not ``jsonb``, so values round-trip byte for byte (``jsonb``
reorders keys). Ids compare with the ``C`` collation: listing order is
code-point order, as in Python.
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql

from awaken_runtime.stores import StoreCorrupt

from ._errors import PostgresSchemaError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "check_schema", "migrate", "valid_schema"]

_V1 = """
CREATE TABLE threads (
  thread_id text COLLATE "C" PRIMARY KEY, version bigint NOT NULL, n_messages bigint NOT NULL,
  n_batches bigint NOT NULL, parked text, latest_run text, updated_at double precision NOT NULL);
CREATE INDEX threads_by_age ON threads (updated_at);
CREATE TABLE messages (
  thread_id text NOT NULL, seq bigint NOT NULL, msg_id text NOT NULL, body text NOT NULL,
  PRIMARY KEY (thread_id, seq));
CREATE UNIQUE INDEX messages_by_id ON messages (thread_id, msg_id);
CREATE TABLE tool_calls (
  thread_id text NOT NULL, call_id text NOT NULL, PRIMARY KEY (thread_id, call_id));
CREATE TABLE batches (
  thread_id text NOT NULL, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (thread_id, seq));
CREATE TABLE state (
  scope text NOT NULL, owner text NOT NULL, key bytea NOT NULL, kind "char" NOT NULL, value text,
  ord bigint GENERATED ALWAYS AS IDENTITY, PRIMARY KEY (scope, owner, key));
CREATE TABLE state_fields (
  scope text NOT NULL, owner text NOT NULL, key bytea NOT NULL, field bytea NOT NULL,
  value text NOT NULL, ord bigint GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (scope, owner, key, field));
CREATE TABLE runs (
  run_id text PRIMARY KEY, thread_id text NOT NULL, phase text NOT NULL, body text NOT NULL,
  updated_at double precision NOT NULL, ord bigint GENERATED ALWAYS AS IDENTITY);
CREATE INDEX runs_by_thread ON runs (thread_id, ord);
CREATE INDEX runs_by_age ON runs (phase, updated_at);
CREATE TABLE events (
  run_id text NOT NULL, seq bigint NOT NULL, at double precision NOT NULL, body text NOT NULL,
  PRIMARY KEY (run_id, seq));
CREATE TABLE configs (
  agent_id text NOT NULL, version bigint NOT NULL, published_at double precision NOT NULL,
  note text NOT NULL, body text NOT NULL, PRIMARY KEY (agent_id, version));
CREATE TABLE leases (
  thread_id text PRIMARY KEY, holder text NOT NULL, token text NOT NULL,
  expires_at double precision NOT NULL)
"""

# Message rows are only ever appended by the store. Anything else done to them (a hand
# edit or delete, an upsert over an existing row) bumps the thread's edit count, so a
# store holding decoded messages knows when to decode the thread again (``_load.py``).
# Counts are never deleted: a re-created thread counts on. The triggers run once per
# statement over its changed rows (a row trigger made deleting a 10,000-message thread
# update one count row 10,000 times in a transaction: seconds). The functions keep the
# migration's search_path, so they find this store's table whatever the session's is.
_BUMP = """
  INSERT INTO message_edits
    SELECT thread_id, count(*) FROM ({rows}) AS changed GROUP BY thread_id
    ON CONFLICT (thread_id) DO UPDATE SET n = message_edits.n + excluded.n;
  RETURN NULL;
"""
_UPDATED = "SELECT thread_id FROM old_rows UNION ALL SELECT thread_id FROM new_rows"
_V2 = f"""
CREATE TABLE message_edits (thread_id text PRIMARY KEY, n bigint NOT NULL);
CREATE FUNCTION awaken_messages_updated() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN{_BUMP.format(rows=_UPDATED)}END $$;
CREATE FUNCTION awaken_messages_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN{_BUMP.format(rows="SELECT thread_id FROM old_rows")}END $$;
CREATE TRIGGER messages_updated AFTER UPDATE ON messages
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION awaken_messages_updated();
CREATE TRIGGER messages_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION awaken_messages_deleted();
"""

MIGRATIONS: list[str] = [_V1, _V2]
"""``MIGRATIONS[n]`` upgrades a store from schema version ``n`` to ``n + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this awaken-store-postgres writes."""

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def valid_schema(name: str) -> str:
    """``name`` if it is a plain lower-case PostgreSQL identifier, else ``ValueError``."""
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"schema name {name!r} is not a plain identifier; use 1-63 characters of "
            f"[a-z0-9_], not starting with a digit (e.g. 'awaken' or 'awaken_test_1')"
        )
    return name


async def _found(conn: psycopg.AsyncConnection[tuple[object, ...]], schema: str) -> int | None:
    """The stored schema version (``None``: no store here yet); raises ``StoreCorrupt``."""
    where = f"postgres schema {schema!r}"
    cur = await conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    )
    tables = {str(r[0]) for r in await cur.fetchall()}
    if "awaken_schema" not in tables:
        if tables:
            raise StoreCorrupt(
                where,
                f"it holds tables that are not an awaken store ({', '.join(sorted(tables))}); "
                f"use another schema (the store's schema= option)",
            )
        return None
    cur = await conn.execute(
        sql.SQL("SELECT version FROM {}.awaken_schema").format(sql.Identifier(schema))
    )
    rows = await cur.fetchall()
    if len(rows) != 1 or not isinstance(rows[0][0], int) or rows[0][0] < 0:
        raise StoreCorrupt(
            where, f"its awaken_schema table must hold one version number, it holds {rows!r}"
        )
    return rows[0][0]


async def check_schema(conn: psycopg.AsyncConnection[tuple[object, ...]], schema: str) -> int:
    """The stored version (0 if none) after refusing a newer or damaged one; changes nothing."""
    found = await _found(conn, schema)
    if found is not None and found > SCHEMA_VERSION:
        raise PostgresSchemaError(f"postgres schema {schema!r}", found, SCHEMA_VERSION)
    return found or 0


async def migrate(
    conn: psycopg.AsyncConnection[tuple[object, ...]], schema: str, target: int = SCHEMA_VERSION
) -> int:
    """Create or upgrade the store in ``schema`` to ``target``; returns the version found."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("awaken:" + schema,))
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        stored = await _found(conn, schema)
        if stored is None:
            await conn.execute(
                sql.SQL("CREATE TABLE {}.awaken_schema (version integer NOT NULL)").format(
                    sql.Identifier(schema)
                )
            )
            await conn.execute(
                sql.SQL("INSERT INTO {}.awaken_schema VALUES (0)").format(sql.Identifier(schema))
            )
        elif stored > SCHEMA_VERSION:
            raise PostgresSchemaError(f"postgres schema {schema!r}", stored, SCHEMA_VERSION)
        found = stored or 0
        if found < target:
            await conn.execute(
                sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema))
            )
            for version in range(found, target):
                await conn.execute(MIGRATIONS[version].encode())
            await conn.execute("UPDATE awaken_schema SET version = %s", (target,))
    return found
