"""The SQLite store's decoded-message cache never serves rows that changed under it.

A load after the first reads only rows appended since; every other change to
the kept rows (a hand edit, a delete, a REPLACE, the thread deleted and
re-created by another process, the database restored from a copy) makes the
next load read the thread again, so it sees exactly what is stored, and a
damaged row is still ``StoreCorrupt`` when read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Message, ToolCall
from awaken_runtime.stores import SQLiteStore, StoreCorrupt
from awaken_runtime.stores.sqlite._schema import connect
from awaken_store_conformance import binding

B = binding("t1")


def _sql(path: Path, statement: str, *args: Any) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(statement, args)


async def _cached(tmp_path: Path, n: int = 3) -> tuple[SQLiteStore, list[Message]]:
    store = SQLiteStore(tmp_path / "a.db")
    messages = [Message.user(f"m{i}") for i in range(n)]
    for i, message in enumerate(messages):
        await store.commit(B, i, [message], [])
    assert (await store.load(B)).messages == messages  # now decoded and kept
    return store, messages


async def test_a_later_load_adds_only_the_new_rows_and_matches_a_fresh_store(
    tmp_path: Path,
) -> None:
    store, messages = await _cached(tmp_path)
    call = ToolCall(id="c1", name="f", arguments={"a": [1, None, {"b": 2.5}]})
    more = [Message.assistant(None, [call]), Message.tool("c1", "ok")]
    await store.commit(B, 3, more, [])
    loaded = (await store.load(B)).messages
    fresh = SQLiteStore(tmp_path / "a.db")
    assert loaded == messages + more == (await fresh.load(B)).messages
    assert (await store.load(B)).messages == loaded  # nothing new


async def test_a_hand_edited_kept_row_is_seen(tmp_path: Path) -> None:
    store, messages = await _cached(tmp_path)
    edited = Message.user("edited", id=messages[1].id)
    _sql(tmp_path / "a.db", "UPDATE messages SET body=? WHERE seq=2", edited.model_dump_json())
    assert (await store.load(B)).messages == [messages[0], edited, messages[2]]


@pytest.mark.parametrize("body", ['{"role": "wizard"}', "not json at all"])
async def test_a_kept_row_damaged_later_is_corrupt(tmp_path: Path, body: str) -> None:
    store, _ = await _cached(tmp_path)
    _sql(tmp_path / "a.db", "UPDATE messages SET body=? WHERE seq=2", body)
    snap = await store.load(B)  # the thread is read again, each row decoded when first read
    with pytest.raises(StoreCorrupt, match="message row 2"):
        list(snap.messages)


async def test_a_deleted_kept_row_is_seen(tmp_path: Path) -> None:
    store, messages = await _cached(tmp_path)
    _sql(tmp_path / "a.db", "DELETE FROM messages WHERE seq=2")
    assert (await store.load(B)).messages == [messages[0], messages[2]]


async def test_a_row_replaced_over_a_kept_seq_is_seen(tmp_path: Path) -> None:
    store, messages = await _cached(tmp_path)
    other = Message.user("other")
    _sql(
        tmp_path / "a.db",
        "INSERT OR REPLACE INTO messages VALUES ('t1', 2, ?, ?)",
        other.id,
        other.model_dump_json(),
    )
    assert (await store.load(B)).messages == [messages[0], other, messages[2]]


async def test_a_thread_deleted_and_recreated_by_another_process(tmp_path: Path) -> None:
    store, _ = await _cached(tmp_path)
    other = SQLiteStore(tmp_path / "a.db")  # its own connection, as another process has
    assert await other.delete_thread("t1")
    again = [Message.user(f"new {i}") for i in range(5)]
    await other.commit(B, 0, again, [])
    assert (await store.load(B)).messages == again


async def test_a_database_restored_from_an_older_copy(tmp_path: Path) -> None:
    store, messages = await _cached(tmp_path, n=2)
    with sqlite3.connect(tmp_path / "a.db") as live, sqlite3.connect(tmp_path / "b.db") as copy:
        live.backup(copy)
    await store.commit(B, 2, [Message.user("after the copy")], [])
    assert len((await store.load(B)).messages) == 3
    with sqlite3.connect(tmp_path / "b.db") as copy, sqlite3.connect(tmp_path / "a.db") as live:
        copy.backup(live)  # page by page: no trigger sees it
    assert (await store.load(B)).messages == messages


async def test_a_restored_copy_of_another_thread_history(tmp_path: Path) -> None:
    # The copy holds a different thread under the same id, with the same edit count.
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    elsewhere = SQLiteStore(other_dir / "a.db")
    theirs = [Message.user(f"theirs {i}") for i in range(4)]
    await elsewhere.commit(B, 0, theirs, [])
    await elsewhere.close()
    store, _ = await _cached(tmp_path)
    with sqlite3.connect(other_dir / "a.db") as src, sqlite3.connect(tmp_path / "a.db") as live:
        src.backup(live)
    assert (await store.load(B)).messages == theirs


async def test_the_edit_triggers_come_with_the_migration(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    connect(str(path), target=2).close()
    store, messages = await _cached(tmp_path)
    _sql(path, "DELETE FROM messages WHERE seq=1")
    assert (await store.load(B)).messages == messages[1:]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT n FROM message_edits WHERE thread_id='t1'").fetchone() == (1,)


async def test_appends_never_count_as_edits(tmp_path: Path) -> None:
    store, _ = await _cached(tmp_path)
    await store.commit(B, 3, [Message.user("x"), Message.assistant("y")], [])
    with sqlite3.connect(tmp_path / "a.db") as conn:
        assert conn.execute("SELECT count(*) FROM message_edits").fetchone() == (0,)
