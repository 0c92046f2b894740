"""SQLite schema, forward migrations, connection setup and error mapping."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from .._errors import StoreCorrupt, StoreError, StoreIOError, StoreSchemaError

__all__ = ["SCHEMA_VERSION", "connect", "translate"]

_V1 = """
CREATE TABLE threads (
  thread_id TEXT PRIMARY KEY, version INTEGER NOT NULL, n_messages INTEGER NOT NULL,
  n_batches INTEGER NOT NULL, parked TEXT, latest_run TEXT, updated_at REAL NOT NULL);
CREATE TABLE messages (
  thread_id TEXT NOT NULL, seq INTEGER NOT NULL, msg_id TEXT NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (thread_id, seq)) WITHOUT ROWID;
CREATE UNIQUE INDEX messages_by_id ON messages (thread_id, msg_id);
CREATE TABLE tool_calls (
  thread_id TEXT NOT NULL, call_id TEXT NOT NULL, PRIMARY KEY (thread_id, call_id)) WITHOUT ROWID;
CREATE TABLE batches (
  thread_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (thread_id, seq)) WITHOUT ROWID;
CREATE TABLE state (
  scope TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, value TEXT);
CREATE UNIQUE INDEX state_pk ON state (scope, owner, key);
CREATE TABLE state_fields (
  scope TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL, field TEXT NOT NULL,
  value TEXT NOT NULL);
CREATE UNIQUE INDEX state_fields_pk ON state_fields (scope, owner, key, field);
CREATE TABLE runs (
  run_id TEXT NOT NULL, thread_id TEXT NOT NULL, phase TEXT NOT NULL, body TEXT NOT NULL,
  updated_at REAL NOT NULL);
CREATE UNIQUE INDEX runs_pk ON runs (run_id);
CREATE INDEX runs_by_thread ON runs (thread_id);
CREATE TABLE events (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE configs (
  agent_id TEXT NOT NULL, version INTEGER NOT NULL, published_at REAL NOT NULL,
  note TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (agent_id, version)) WITHOUT ROWID;
CREATE TABLE leases (
  thread_id TEXT PRIMARY KEY, holder TEXT NOT NULL, token TEXT NOT NULL,
  expires_at REAL NOT NULL);
"""

_V2 = """
CREATE INDEX runs_by_age ON runs (phase, updated_at);
CREATE INDEX threads_by_age ON threads (updated_at);
"""

_BUMP = (
    "INSERT INTO message_edits VALUES ({0}.thread_id, 1) "
    "ON CONFLICT (thread_id) DO UPDATE SET n = n + 1"
)

# Message rows are only ever appended by the store. Anything else done to them (a hand
# edit, a delete, a REPLACE over an existing seq) bumps the thread's edit count, so a
# process holding decoded messages knows when it must decode the thread again
# (``_load.py``). Counts are never deleted: a re-created thread counts on.
_V3 = f"""
CREATE TABLE message_edits (thread_id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER messages_updated AFTER UPDATE ON messages BEGIN
  {_BUMP.format("old")}; {_BUMP.format("new")};
END;
CREATE TRIGGER messages_deleted AFTER DELETE ON messages BEGIN {_BUMP.format("old")}; END;
CREATE TRIGGER messages_replaced AFTER INSERT ON messages
  WHEN new.seq <= (SELECT n_messages FROM threads WHERE thread_id = new.thread_id)
  BEGIN {_BUMP.format("new")}; END;
"""

# A chunk is a copy of a range of message rows (``_chunks.py``). Anything done to a
# row in or before a chunk's range, other than the store's appends, drops that chunk and
# every later one of the thread, so the chunks left always match the rows as they stand.
_DROP_CHUNKS = "DELETE FROM message_chunks WHERE thread_id = {0}.thread_id AND last_seq >= {0}.seq"
_V4 = f"""
CREATE TABLE message_chunks (
  thread_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  n INTEGER NOT NULL, body TEXT, PRIMARY KEY (thread_id, first_seq)) WITHOUT ROWID;
CREATE TRIGGER chunks_updated AFTER UPDATE ON messages BEGIN
  {_DROP_CHUNKS.format("old")}; {_DROP_CHUNKS.format("new")};
END;
CREATE TRIGGER chunks_deleted AFTER DELETE ON messages BEGIN {_DROP_CHUNKS.format("old")}; END;
CREATE TRIGGER chunks_replaced AFTER INSERT ON messages
  WHEN new.seq <= (SELECT n_messages FROM threads WHERE thread_id = new.thread_id)
  BEGIN {_DROP_CHUNKS.format("new")}; END;
"""

# In a WITHOUT ROWID table the whole row is the B-tree key, and SQLite compares a probe
# against a key that overflows its page only after reading all of it: every seek into
# the version 4 chunks table (one per commit to a long thread) read whole chunk bodies,
# hundreds of KB, from the page cache or the disk. As a rowid table, the key (thread_id,
# first_seq) lives in a small index and a lookup reads only a row's first bytes.
# The triggers go while the table is replaced: a rename checks every trigger's text.
_V5 = f"""
CREATE TABLE message_chunks_v5 (
  thread_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  n INTEGER NOT NULL, body TEXT);
INSERT INTO message_chunks_v5 SELECT thread_id, first_seq, last_seq, n, body FROM message_chunks;
DROP TRIGGER chunks_updated;
DROP TRIGGER chunks_deleted;
DROP TRIGGER chunks_replaced;
DROP TABLE message_chunks;
ALTER TABLE message_chunks_v5 RENAME TO message_chunks;
CREATE UNIQUE INDEX message_chunks_pk ON message_chunks (thread_id, first_seq);
CREATE TRIGGER chunks_updated AFTER UPDATE ON messages BEGIN
  {_DROP_CHUNKS.format("old")}; {_DROP_CHUNKS.format("new")};
END;
CREATE TRIGGER chunks_deleted AFTER DELETE ON messages BEGIN {_DROP_CHUNKS.format("old")}; END;
CREATE TRIGGER chunks_replaced AFTER INSERT ON messages
  WHEN new.seq <= (SELECT n_messages FROM threads WHERE thread_id = new.thread_id)
  BEGIN {_DROP_CHUNKS.format("new")}; END;
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5]
"""``MIGRATIONS[n]`` upgrades a database from schema version ``n`` to ``n + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)

_CORRUPT = {"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_FORMAT"}


def translate(path: str, action: str, exc: sqlite3.Error) -> StoreError:
    """The typed store error for a ``sqlite3`` error."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.split("_")[0:2] == ["SQLITE", "CORRUPT"] or name in _CORRUPT:
        return StoreCorrupt(path, f"SQLite reports {name}: {exc}")
    if "malformed" in str(exc) or "not a database" in str(exc):
        return StoreCorrupt(path, f"SQLite reports: {exc}")
    return StoreIOError(path, action, exc)


@contextmanager
def guarded(path: str, action: str) -> Iterator[None]:
    """Turn ``sqlite3`` errors raised inside the block into typed store errors."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(path, action, exc) from exc


def connect(
    path: str, *, durable: bool = False, target: int = SCHEMA_VERSION
) -> sqlite3.Connection:
    """Open (creating or migrating) an awaken SQLite database at ``path``.

    Raises ``StoreCorrupt`` for a damaged file or a database that is not an
    awaken store, ``StoreSchemaError`` for a newer schema, ``StoreIOError``
    when the file cannot be opened or written.
    """
    with guarded(path, "open"):
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    try:
        with guarded(path, "open"):
            conn.execute("PRAGMA busy_timeout = 30000")
            if path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            _migrate(conn, path, target)
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection, path: str, target: int) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "schema_version" not in tables:
            if tables:
                raise StoreCorrupt(
                    path,
                    f"it is an SQLite database but not an awaken store (tables: "
                    f"{', '.join(sorted(tables))}); point the store at a new file",
                )
            conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO schema_version VALUES (0)")
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        if row is None or not isinstance(row[0], int):
            raise StoreCorrupt(path, "the schema_version table is empty or invalid")
        found = row[0]
        if found > SCHEMA_VERSION:
            raise StoreSchemaError(path, found, SCHEMA_VERSION)
        for version in range(found, target):
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
        if found < target:
            conn.execute("UPDATE schema_version SET version = ?", (target,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """The statements of ``script`` (a trigger's body holds semicolons of its own)."""
    out: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending)
            pending = ""
    if pending.strip(" \n;"):
        out.append(pending)
    return out
