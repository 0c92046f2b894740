"""The SQLite store's message chunks never make a load differ from the message rows.

A long thread's older rows are also kept as chunk rows, so a first load steps
over a few rows instead of thousands. Whatever happens to the rows (hand edits,
deletes, REPLACEs, pretty-printed or bytes bodies, a damaged row, a chunk row
tampered with, a commit that fails half-way, an older schema), a load, from a
new store object or from one that kept the thread, equals the rows as they
stand. ``CHUNK`` is made small here so a few messages make chunks.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awaken_runtime import Command, CommittedBatch, Message, ToolCall, VersionConflict
from awaken_runtime.stores import SQLiteStore, StoreCorrupt, StoreError
from awaken_runtime.stores.sqlite import _chunks as _sqlite_chunks
from awaken_runtime.stores.sqlite import _commit as _sqlite_commit
from awaken_runtime.stores.sqlite import _schema as _sqlite_schema
from awaken_runtime.stores.sqlite._schema import SCHEMA_VERSION, connect
from awaken_store_conformance import binding

B = binding("t1")
SMALL = 3


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sqlite_chunks, "CHUNK", SMALL)


def _db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _rows(path: Path, tid: str = "t1") -> list[Message]:
    """The thread as its message rows stand, decoded one by one."""
    with _db(path) as conn:
        rows = conn.execute("SELECT body FROM messages WHERE thread_id=? ORDER BY seq", (tid,))
        return [Message.model_validate_json(body) for (body,) in rows]


def _chunks(path: Path, tid: str = "t1") -> list[tuple[int, int, int]]:
    with _db(path) as conn:
        sql = "SELECT first_seq, last_seq, n FROM message_chunks WHERE thread_id=? ORDER BY 1"
        return [tuple(r) for r in conn.execute(sql, (tid,))]


def _version(path: Path) -> int:
    with _db(path) as conn:
        row = conn.execute("SELECT version FROM threads WHERE thread_id='t1'").fetchone()
    return row[0] if row else 0


async def _fresh(path: Path) -> list[Message]:
    store = SQLiteStore(path)
    try:
        return list((await store.load(B)).messages)
    finally:
        await store.close()


def _history(n: int, start: int = 0) -> list[Message]:
    out: list[Message] = []
    for i in range(start, start + n):
        if i % 3 == 1:
            call = ToolCall(id=f"c{i}", name="f", arguments={"q": f"line\none {i}"})
            out.append(Message.assistant(None, [call]))
        else:
            out.append(Message.user(f"m{i}\nwith a newline and a \\n"))
    return out


async def _ten_in(path: Path, step: int) -> tuple[SQLiteStore, list[Message], int]:
    """A store holding ten messages committed ``step`` at a time, and its version."""
    store = SQLiteStore(path)
    history = _history(10)
    version = 0
    for i in range(0, 10, step):
        version = await store.commit(B, version, history[i : i + step], [])
    return store, history, version


async def test_chunks_cover_a_prefix_and_a_load_equals_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store, history, _ = await _ten_in(path, step=2)
    # Chunks close at the first commit that brings SMALL unchunked rows or more.
    assert _chunks(path) == [(1, 4, 4), (5, 8, 4)]
    assert await _fresh(path) == history == _rows(path)
    assert (await store.load(B)).messages == history
    await store.close()


async def test_a_chunk_closes_exactly_when_the_thread_reaches_chunk_size(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = SQLiteStore(path)
    history = _history(SMALL + 1)
    version = await store.commit(B, 0, history[: SMALL - 1], [])
    assert _chunks(path) == []  # one short of a chunk: none, and no lookup needed
    with _db(path) as conn:  # a hand-made chunk row before the thread's first seq
        conn.execute("INSERT INTO message_chunks VALUES ('t1', -5, -1, 1, 'junk')")
    assert await _fresh(path) == history[: SMALL - 1]
    version = await store.commit(B, version, history[SMALL - 1 : SMALL], [])
    assert _chunks(path) == [(-5, -1, 1), (1, SMALL, SMALL)]
    assert await _fresh(path) == history[:SMALL] == _rows(path)
    with _db(path) as conn:
        conn.execute("DELETE FROM message_chunks WHERE first_seq = -5")
    await store.commit(B, version, history[SMALL:], [])
    assert _chunks(path) == [(1, SMALL, SMALL)]
    assert await _fresh(path) == history == (await store.load(B)).messages
    await store.close()


async def test_a_deleted_thread_takes_its_chunks_along(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = SQLiteStore(path)
    await store.commit(B, 0, _history(7), [])
    assert _chunks(path) == [(1, 7, 7)]
    assert await store.delete_thread("t1")
    assert _chunks(path) == []
    again = _history(4, start=100)
    await store.commit(B, 0, again, [])
    assert _chunks(path) == [(1, 4, 4)]
    assert await _fresh(path) == again == (await store.load(B)).messages
    await store.close()


_TAMPERS = [
    "UPDATE message_chunks SET n = n + 1 WHERE first_seq = 1",
    "UPDATE message_chunks SET n = n - 1 WHERE first_seq = 5",
    "UPDATE message_chunks SET body = body || char(10) || body WHERE first_seq = 1",
    "UPDATE message_chunks SET body = CAST(body AS BLOB) WHERE first_seq = 1",
    "UPDATE message_chunks SET first_seq = 6 WHERE first_seq = 5",
    "UPDATE message_chunks SET body = NULL WHERE first_seq = 5",
    "DELETE FROM message_chunks WHERE first_seq = 1",
    "UPDATE message_chunks SET last_seq = 2 WHERE first_seq = 5",
    "UPDATE message_chunks SET n = 0 WHERE first_seq = 1",
    "UPDATE message_chunks SET last_seq = 6 WHERE first_seq = 5",
]
"""Hand changes to chunk rows that make a chunk disagree with its rows (chunks (1, 4)
and (5, 8) of ten messages)."""


@pytest.mark.parametrize("tamper", _TAMPERS)
async def test_a_chunk_that_does_not_match_its_rows_is_not_used(
    tmp_path: Path, tamper: str
) -> None:
    path = tmp_path / "a.db"
    store, history, version = await _ten_in(path, step=4)
    assert _chunks(path) == [(1, 4, 4), (5, 8, 4)]
    with _db(path) as conn:
        conn.execute(tamper)
    assert await _fresh(path) == history
    more = _history(SMALL, start=10)  # a commit that chunks again, past the tampered rows
    await store.commit(B, version, more, [])
    assert await _fresh(path) == history + more == _rows(path)
    await store.close()


async def test_a_damaged_row_chunked_later_is_still_corrupt_when_read(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = SQLiteStore(path)
    await store.commit(B, 0, _history(2), [])
    with _db(path) as conn:
        conn.execute('UPDATE messages SET body=\'{"role": "wizard"}\' WHERE seq=2')
    await store.commit(B, 1, _history(2, start=2), [])
    assert _chunks(path) == [(1, 4, 4)]  # the damaged row is copied as it stands
    snap = await SQLiteStore(path).load(B)
    with pytest.raises(StoreCorrupt, match="message row 2"):
        list(snap.messages)
    await store.close()


async def test_a_commit_that_fails_after_chunking_leaves_no_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.db"
    store = SQLiteStore(path)
    history = _history(6)
    await store.commit(B, 0, history[:2], [])

    def crash(*_: Any) -> None:
        raise OSError("disk gone mid-commit")

    monkeypatch.setattr(_sqlite_commit, "apply_command_sql", crash)
    batch = CommittedBatch(revision=1, phase="StepEnd", entries=[("p", Command.set("k", 1))])
    with pytest.raises(Exception, match="disk gone"):
        await store.commit(B, 1, history[2:4], [batch])
    assert _chunks(path) == [] and _rows(path) == history[:2] and _version(path) == 1
    monkeypatch.undo()
    monkeypatch.setattr(_sqlite_chunks, "CHUNK", SMALL)
    await store.commit(B, 1, history[2:4], [])
    assert _chunks(path) == [(1, 4, 4)]
    assert await _fresh(path) == history[:4]
    await store.close()


@pytest.mark.parametrize("stores", ["one store", "two stores"])
async def test_two_commits_racing_leave_only_the_winners_chunk(tmp_path: Path, stores: str) -> None:
    # One store groups concurrent commits into one transaction, each in a savepoint; two
    # stores are two connections, as two processes have. Each racer's commit would chunk.
    path = tmp_path / "a.db"
    first = SQLiteStore(path)
    second = first if stores == "one store" else SQLiteStore(path)
    base = _history(2)
    await first.commit(B, 0, base, [])
    ours, theirs = _history(4, start=10), _history(4, start=20)
    other = binding("t2")
    results = await asyncio.gather(
        first.commit(B, 1, ours, []),
        second.commit(B, 1, theirs, []),
        first.commit(other, 0, _history(4, start=30), []),  # a bystander in the same batch
        return_exceptions=True,
    )
    assert sum(isinstance(r, VersionConflict) for r in results[:2]) == 1, results
    won = ours if results[0] == 2 else theirs
    assert results[2] == 1
    assert _chunks(path) == [(1, 6, 6)] and _chunks(path, "t2") == [(1, 4, 4)]
    assert await _fresh(path) == base + won == _rows(path)
    for store in {first, second}:
        assert (await store.load(B)).messages == base + won
        await store.close()


async def test_a_database_from_before_chunks_gains_them(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = SQLiteStore(path)
    history = _history(9)
    await store.commit(B, 0, history[:2], [])
    await store.close()
    with _db(path) as conn:  # back to schema version 3, a thread already in it
        for trigger in ("chunks_updated", "chunks_deleted", "chunks_replaced"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE message_chunks")
        conn.execute("UPDATE schema_version SET version = 3")
        conn.execute(
            "INSERT INTO messages VALUES ('t1', 3, ?, ?)",
            (history[2].id, history[2].model_dump_json()),
        )
        conn.execute("UPDATE threads SET n_messages = 3")
    assert SCHEMA_VERSION == 5
    store = SQLiteStore(path)
    assert (await store.load(B)).messages == history[:3]
    await store.commit(B, 1, history[3:5], [])
    assert _chunks(path) == [(1, 5, 5)]
    assert await _fresh(path) == history[:5] == (await store.load(B)).messages
    await store.close()


def _version_4(path: Path, messages: list[Message], step: int | None = None) -> int:
    """A schema version 4 database holding ``messages`` as thread t1, committed ``step``
    at a time (all at once by default) and chunked as they went; the thread's version."""
    step = step or len(messages)
    conn = connect(str(path), target=4)
    try:
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        for n in range(0, len(messages), step):
            _sqlite_commit.insert_commit(cur, B, (n, 0), messages[n : n + step], [], None)
        version = -(-len(messages) // step)
        cur.execute(
            "INSERT INTO threads VALUES ('t1', ?, ?, 0, NULL, NULL, 0)", (version, len(messages))
        )
        cur.execute("COMMIT")
        with pytest.raises(sqlite3.OperationalError, match="rowid"):  # WITHOUT ROWID
            cur.execute("SELECT rowid FROM message_chunks")
    finally:
        conn.close()
    return version


async def test_a_version_4_database_keeps_its_chunks_in_a_table_with_small_keys(
    tmp_path: Path,
) -> None:
    # Version 4 kept the chunks WITHOUT ROWID, so each chunk's body was part of its B-tree
    # key and every lookup read whole bodies; version 5 moves them to a rowid table.
    path = tmp_path / "a.db"
    history = _history(8)
    _version_4(path, history[:5])
    assert _chunks(path) == [(1, 5, 5)]
    store = SQLiteStore(path)
    with _db(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT count(rowid) FROM message_chunks").fetchone() == (1,)
    assert _chunks(path) == [(1, 5, 5)]
    assert await _fresh(path) == history[:5] == (await store.load(B)).messages
    # still one chunk per start
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"), _db(path) as conn:
        conn.execute("INSERT INTO message_chunks VALUES ('t1', 1, 2, 2, NULL)")
    edited = history[1].model_copy(update={"name": "edited"})
    with _db(path) as conn:  # the triggers came back: an edited row drops its chunk
        conn.execute("UPDATE messages SET body=? WHERE seq=2", (edited.model_dump_json(),))
    assert _chunks(path) == []
    await store.commit(B, 1, history[5:], [])
    assert _chunks(path) == [(1, 8, 8)]
    expected = [history[0], edited, *history[2:]]
    assert await _fresh(path) == expected == _rows(path) == (await store.load(B)).messages
    await store.close()


async def test_a_migration_to_version_5_that_fails_part_way_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.db"
    history = _history(5)
    _version_4(path, history)
    with _db(path) as conn:
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    # The last statement fails after the table was copied, dropped and renamed.
    broken = [*_sqlite_schema.MIGRATIONS[:4], _sqlite_schema.MIGRATIONS[4] + "SELECT x FROM gone;"]
    monkeypatch.setattr(_sqlite_schema, "MIGRATIONS", broken)
    with pytest.raises(StoreError, match="gone") as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)
    with _db(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (4,)
        assert conn.execute(
            "SELECT type, name, sql FROM sqlite_master ORDER BY name"
        ).fetchall() == (schema)
        with pytest.raises(sqlite3.OperationalError, match="rowid"):
            conn.execute("SELECT rowid FROM message_chunks")
    assert _chunks(path) == [(1, 5, 5)]
    monkeypatch.undo()
    monkeypatch.setattr(_sqlite_chunks, "CHUNK", SMALL)
    store = SQLiteStore(path)  # the next open migrates
    assert _chunks(path) == [(1, 5, 5)]
    assert await _fresh(path) == history == (await store.load(B)).messages
    await store.close()


@pytest.mark.parametrize("tamper", _TAMPERS)
async def test_a_chunk_tampered_with_before_the_version_5_migration_is_not_used(
    tmp_path: Path, tamper: str
) -> None:
    # Version 5 copies version 4's chunk rows as they are: a chunk changed by hand
    # before the upgrade is judged against its rows after it, as on version 5.
    path = tmp_path / "a.db"
    history = _history(10)
    version = _version_4(path, history, step=4)
    assert _chunks(path) == [(1, 4, 4), (5, 8, 4)]
    with _db(path) as conn:
        conn.execute(tamper)
    tampered = _chunks(path)
    store = SQLiteStore(path)  # migrates
    with _db(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    assert _chunks(path) == tampered
    assert await _fresh(path) == history == (await store.load(B)).messages
    more = _history(SMALL, start=10)
    await store.commit(B, version, more, [])
    assert await _fresh(path) == history + more == _rows(path) == (await store.load(B)).messages
    await store.close()


# -- every way the rows can change under the chunks, in any order ---------------------------

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.integers(1, 5)),
        st.tuples(
            st.sampled_from(["update", "pretty", "bytes", "delete", "replace", "load"]),
            st.integers(0, 40),
        ),
    ),
    min_size=1,
    max_size=25,
)


async def _apply(path: Path, store: SQLiteStore, ops: list[tuple[str, int]]) -> None:
    made = 0
    for op, arg in ops:
        if op == "commit":
            await store.commit(B, _version(path), _history(arg, start=made), [])
            made += arg
            continue
        if op == "load":
            assert (await store.load(B)).messages == _rows(path)
            continue
        with _db(path) as conn:
            seqs = [s for (s,) in conn.execute("SELECT seq FROM messages ORDER BY seq")]
            if not seqs:
                continue
            seq = seqs[arg % len(seqs)]
            (body,) = conn.execute("SELECT body FROM messages WHERE seq=?", (seq,)).fetchone()
            if op == "update":  # the same message, said differently
                edited = Message.model_validate_json(body).model_copy(update={"name": "edited"})
                conn.execute(
                    "UPDATE messages SET body=? WHERE seq=?", (edited.model_dump_json(), seq)
                )
            elif op == "pretty":  # a hand-written body with raw newlines between its tokens
                pretty = json.dumps(json.loads(body), indent=2)
                conn.execute("UPDATE messages SET body=? WHERE seq=?", (pretty, seq))
            elif op == "bytes":
                raw = body if isinstance(body, bytes) else body.encode()
                conn.execute("UPDATE messages SET body=? WHERE seq=?", (raw, seq))
            elif op == "delete":
                conn.execute("DELETE FROM messages WHERE seq=?", (seq,))
            else:  # a REPLACE over the row with another message
                other = Message.user(f"replaced {made}\n")
                made += 1
                conn.execute(
                    "INSERT OR REPLACE INTO messages VALUES ('t1', ?, ?, ?)",
                    (seq, other.id, other.model_dump_json()),
                )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=_OPS)
def test_any_mix_of_appends_and_hand_changes_loads_as_the_rows_stand(
    ops: list[tuple[str, int]],
) -> None:
    async def check(path: Path) -> None:
        store = SQLiteStore(path)
        try:
            await _apply(path, store, ops)
            expected = _rows(path)
            assert await _fresh(path) == expected
            assert (await store.load(B)).messages == expected
            await store.commit(B, _version(path), _history(SMALL, start=1000), [])
            expected = _rows(path)
            assert await _fresh(path) == expected
            assert (await store.load(B)).messages == expected
        finally:
            await store.close()

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(check(Path(tmp) / "a.db"))
