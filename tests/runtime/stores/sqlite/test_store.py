"""SQLite backend specifics: row counts, schema versions, corrupt files, full disks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from awaken_runtime import Command, MergePolicy, Message, Scope
from awaken_runtime.stores import (
    SCHEMA_VERSION,
    SQLiteStore,
    StoreCorrupt,
    StoreIOError,
    StoreSchemaError,
)
from awaken_runtime.stores.sqlite._schema import connect
from awaken_store_conformance import batch, binding

C = MergePolicy.COMMUTATIVE


def _rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_merging_one_field_into_100k_fields_writes_one_state_row(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    b = binding()
    big = {f"f{i}": i for i in range(100_000)}
    await store.commit(b, 0, [], [batch(Command.set("mem", big, merge=C))])
    conn = store._conn
    before = conn.total_changes
    await store.commit(b, 1, [], [batch(Command.set("mem", {"f7": "seven"}, merge=C))])
    # one state_fields row + one batches row + the threads row
    assert conn.total_changes - before == 3
    snap = await store.load(b)
    assert snap.state[(Scope.THREAD, "mem")]["f7"] == "seven"
    assert len(snap.state[(Scope.THREAD, "mem")]) == 100_000
    await store.close()


async def test_appending_a_step_never_rewrites_the_thread(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    b = binding()
    version = 0
    for i in range(50):
        version = await store.commit(b, version, [Message.user(f"m{i}")], [])
    before = store._conn.total_changes
    await store.commit(b, version, [Message.user("new"), Message.assistant("a")], [])
    assert store._conn.total_changes - before == 3  # two messages + the threads row
    await store.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    SQLiteStore(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreSchemaError) as info:
        SQLiteStore(path)
    assert str(path) in str(info.value) and "upgrade awaken-runtime" in str(info.value)


async def test_an_old_schema_is_migrated_forward(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    connect(str(path), target=1).close()
    store = SQLiteStore(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "runs_by_age" in names
    await store.commit(binding(), 0, [Message.user("hi")], [])


def test_a_file_that_is_not_a_database_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is a text file, not SQLite\n" * 200)
    with pytest.raises(StoreCorrupt) as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(StoreCorrupt, match="not an awaken store"):
        SQLiteStore(path)


async def test_a_truncated_database_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = SQLiteStore(path)
    b = binding()
    version = 0
    for i in range(300):
        version = await store.commit(b, version, [Message.user("x" * 500 + str(i))], [])
    await store.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(StoreCorrupt) as info:
        reopened = SQLiteStore(path)
        await reopened.load(b)
    assert str(path) in str(info.value)


async def test_disk_full_is_typed_and_commits_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    b = binding()
    await store.commit(b, 0, [Message.user("small")], [])
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    with pytest.raises(StoreIOError) as info:
        await store.commit(b, 1, [Message.user("y" * 200_000)], [batch(Command.set("k", 1))])
    assert "nothing was committed" in str(info.value)
    snap = await store.load(b)
    assert snap.version == 1 and [m.text for m in snap.messages] == ["small"] and snap.state == {}
    assert _rows(tmp_path / "a.db", "batches") == 0


def test_an_unwritable_location_is_a_typed_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreIOError):
        SQLiteStore(blocker / "sub" / "a.db")
