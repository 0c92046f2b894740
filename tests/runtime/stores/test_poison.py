"""Issue 16, item 6: poison input never bricks a thread.

Damaged rows are ``StoreCorrupt`` naming the thread and row, never a raw
pydantic/JSON/OS error; a file store never appends on top of a line it could
not replay; ids and input no store can keep are refused before anything is
written; model and tool text with lone surrogates is stored with U+FFFD; a
lease whose release failed is released at the next opportunity.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import InvalidId, InvalidInput, Message, ScriptedTurn, ToolCall
from awaken_runtime.stores import FileStore, InMemoryStore, SQLiteStore, StoreCorrupt, StoreIOError
from awaken_runtime.testing import scripted_runtime
from awaken_store_conformance import binding, run_record

BAD = "\ud800"


def _store(kind: str, tmp_path: Path, **kw: Any) -> Any:
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "a.db", **kw)
    if kind == "file":
        return FileStore(tmp_path / "f", **kw)
    return InMemoryStore(**kw)


async def _three(store: Any, tid: str = "t1") -> None:
    b = binding(tid)
    for i in range(3):
        await store.commit(b, i, [Message.user(f"m{i}")], [])


# -- SQLite rows -------------------------------------------------------------------------


def _sql(path: Path, statement: str, *args: Any) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(statement, args)


@pytest.mark.parametrize(
    "body", ['{"role": "wizard"}', "not json at all", '{"role": "user", "content": 5}', "[]"]
)
async def test_a_bad_message_row_is_corrupt_naming_thread_and_row(
    tmp_path: Path, body: str
) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    await _three(store)
    _sql(tmp_path / "a.db", "UPDATE messages SET body=? WHERE seq=2", body)
    # A load reads rows; a message is decoded when something reads it.
    snap = await store.load(binding("t1"))

    async def read_loaded() -> object:
        return list(snap.messages)

    for read in (read_loaded(), store.read_messages("t1")):
        with pytest.raises(StoreCorrupt) as info:
            await read
        text = str(info.value)
        assert "'t1'" in text and "message row 2" in text and str(tmp_path / "a.db") in text
    with pytest.raises(StoreCorrupt, match="message row 2"):
        snap.messages[1]
    assert snap.messages[2].text == "m2"  # the rows after it still decode


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_a_run_that_sends_a_damaged_message_ends_naming_it(tmp_path: Path, kind: str) -> None:
    store = _store(kind, tmp_path)
    await _three(store)
    await store.close()
    if kind == "sqlite":
        _sql(tmp_path / "a.db", "UPDATE messages SET body=? WHERE seq=2", '{"role": "wizard"}')
        where = "message row 2"
    else:
        path = tmp_path / "f" / "threads" / "t1.jsonl"
        lines = path.read_bytes().split(b"\n")
        record = json.loads(lines[1])
        record["m"][0]["role"] = "wizard"  # a well-formed commit line, a damaged message
        lines[1] = json.dumps(record).encode()
        path.write_bytes(b"\n".join(lines))
        where = "message row 2"
    # The whole thread goes to the model: the run ends with the store's error, not a
    # provider's or a plugin's, and the store is usable for the next run.
    store = _store(kind, tmp_path)
    rig = scripted_runtime(["done"], store=store)
    state = await rig.runtime.run("agent", "hello", thread_id="t1")
    failure = state.end_cause.failure  # type: ignore[union-attr]
    assert failure.kind == "internal"
    assert "StoreCorrupt" in failure.message and "'t1'" in failure.message
    assert where in failure.message
    # A run whose window leaves the damaged message out never reads it.
    rig = scripted_runtime(["done"], store=store, context_policy={"keep_last": 2})
    state = await rig.runtime.run("agent", "again", thread_id="t1")
    assert state.end_cause.kind == "natural_end"
    await store.close()


async def test_bad_parked_run_and_state_rows_are_corrupt(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    store = SQLiteStore(db)
    await _three(store)
    _sql(db, "UPDATE threads SET parked=? WHERE thread_id='t1'", '{"run_id": 1}')
    with pytest.raises(StoreCorrupt, match="parked run"):
        await store.load(binding("t1"))
    _sql(db, "UPDATE threads SET parked=NULL WHERE thread_id='t1'")
    await store.commit(binding("t1"), 3, [], [], run_record=run_record("r1", "t1"))
    _sql(db, "UPDATE runs SET body='{\"broken\": true}'")
    with pytest.raises(StoreCorrupt, match="run 'r1'"):
        await store.load(binding("t1"))
    with pytest.raises(StoreCorrupt, match="thread 't1' run"):
        await store.list_runs("t1")


async def test_a_damaged_page_is_corrupt_not_an_io_error(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    store = SQLiteStore(db)
    b = binding("t1")
    version = 0
    for i in range(200):
        version = await store.commit(b, version, [Message.user("x" * 400 + str(i))], [])
    await store.close()
    data = bytearray(db.read_bytes())
    page = 4096
    for offset in range(page * 3, len(data) - page, page * 2):  # leave the header page
        data[offset : offset + 64] = b"\xff" * 64
    db.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt) as info:
        reopened = SQLiteStore(db)
        await reopened.load(b)
    assert not isinstance(info.value, StoreIOError)
    assert str(db) in str(info.value)


# -- the file store never appends on top of a bad line ------------------------------------


async def _assert_stuck(reader: FileStore, path: Path, line: int) -> None:
    damaged = path.read_bytes()
    for _ in range(2):  # a second attempt fails the same way: the position never moved
        with pytest.raises(StoreCorrupt, match=f"line {line}"):
            await reader.load(binding("t1"))
    for expected in (1, 3, 4):
        with pytest.raises(StoreCorrupt):
            await reader.commit(binding("t1"), expected, [Message.user("x")], [])
    assert path.read_bytes() == damaged


async def test_a_process_that_cannot_replay_a_thread_never_appends_to_it(tmp_path: Path) -> None:
    await _three(FileStore(tmp_path))
    path = tmp_path / "threads" / "t1.jsonl"
    good = path.read_bytes()
    lines = good.split(b"\n")
    record = json.loads(lines[1])
    del record["m"][0]["id"]  # valid JSON, not a valid commit (every stored message has an id)
    lines[1] = json.dumps(record).encode()
    path.write_bytes(b"\n".join(lines))
    reader = FileStore(tmp_path)
    await _assert_stuck(reader, path, 2)
    path.write_bytes(good)  # restored from a backup: usable again
    assert [m.text for m in (await reader.load(binding("t1"))).messages] == ["m0", "m1", "m2"]
    assert await reader.commit(binding("t1"), 3, [Message.user("m3")], []) == 4


async def test_a_live_mirror_never_appends_after_a_bad_new_line(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    await _three(store)
    path = tmp_path / "threads" / "t1.jsonl"
    good = path.read_bytes()
    bad = {"c": "x", "v": 4, "at": 1.0, "m": [{"role": "wizard"}], "b": [], "r": None, "p": None}
    with open(path, "ab") as f:  # what a buggy writer elsewhere appended
        f.write(json.dumps(bad).encode() + b"\n")
    await _assert_stuck(store, path, 4)
    path.write_bytes(good)
    assert [m.text for m in (await store.load(binding("t1"))).messages] == ["m0", "m1", "m2"]
    assert await store.commit(binding("t1"), 3, [Message.user("m3")], []) == 4


# -- ids and input the caller controls are refused before anything is written ---------------


@pytest.mark.parametrize("kind", ["memory", "sqlite", "file"])
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("thread_id", "t" + BAD),
        ("thread_id", "x" * 5000),
        ("thread_id", ""),
        ("run_id", "r" + BAD),
        ("profile_id", "p" * 300),
        ("namespace", "n" + BAD),
    ],
)
async def test_ids_no_store_can_keep_are_a_typed_error(
    tmp_path: Path, kind: str, field: str, value: str
) -> None:
    store = _store(kind, tmp_path)
    rig = scripted_runtime(["never"], store=store)
    kwargs = {"thread_id": "t-ok", field: value}
    with pytest.raises(InvalidId) as info:
        await rig.run("hi", **kwargs)
    assert field.replace("_", " ") in str(info.value)
    assert isinstance(info.value, ValueError)
    assert rig.executor.requests == []
    assert (await store.load(binding("t-ok"))).version == 0


async def test_an_id_too_long_for_a_file_name_is_a_typed_error(tmp_path: Path) -> None:
    rig = scripted_runtime(["never"], store=FileStore(tmp_path))
    with pytest.raises(InvalidId, match="too long for the file store"):
        await rig.run("hi", thread_id="漢" * 100)  # 100 characters, 906 bytes as a file name
    assert list((tmp_path / "threads").iterdir()) == []


@pytest.mark.parametrize("kind", ["memory", "sqlite", "file"])
@pytest.mark.parametrize(
    ("make", "poisoned"),
    [
        (lambda: "hello " + BAD, True),
        (lambda: "héllo \U0001f600", False),
        (lambda: Message.user("fine"), False),
        (lambda: [Message.user("fine"), Message.user("x", metadata={"k": [BAD]})], True),
        (lambda: Message(role="user", content=[{"type": "text", "text": BAD}]), True),
    ],
)
async def test_input_with_a_lone_surrogate_is_a_typed_error(
    tmp_path: Path, kind: str, make: Any, poisoned: bool
) -> None:
    store = _store(kind, tmp_path)
    rig = scripted_runtime(["ok"], store=store)
    value = make()
    if not poisoned:
        assert (await rig.run(value, thread_id="t")).final_text == "ok"
        return
    with pytest.raises(InvalidInput, match="lone surrogate"):
        await rig.run(value, thread_id="t")
    assert rig.executor.requests == []
    assert (await store.load(binding("t"))).version == 0


# -- text the runtime does not control is stored with U+FFFD -------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_model_and_tool_text_with_lone_surrogates_is_stored_replaced(
    tmp_path: Path, kind: str
) -> None:
    ran: list[str] = []

    def listing(folder: str) -> str:
        """List a folder (os.listdir gives surrogates for names that are not UTF-8)."""
        ran.append(folder)
        return "caf\udce9.txt"

    store = _store(kind, tmp_path)
    turns = [
        ScriptedTurn(
            tool_calls=[ToolCall(id="c" + BAD, name="listing", arguments={"folder": "d" + BAD})]
        ),
        "found caf" + BAD,
    ]
    rig = scripted_runtime(turns, tools=[listing], store=store)
    state = await rig.run("list it", thread_id="t")
    assert state.end_cause is not None and state.end_cause.kind == "natural_end"
    assert ran == ["d\ufffd"]
    reloaded = await _store(kind, tmp_path).load(binding("t"))
    texts = [m.text for m in reloaded.messages]
    assert "caf\ufffd.txt" in texts and "found caf\ufffd" in texts
    calls = [c for m in reloaded.messages for c in (m.tool_calls or [])]
    assert calls[0].arguments == {"folder": "d\ufffd"} and calls[0].id == "c\ufffd"


# -- a failed lease release does not block the thread ------------------------------------


async def test_a_failed_release_is_retried_at_the_next_opportunity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / "a.db", lease_ttl=60.0)
    rig = scripted_runtime(["one", "two"], store=store)
    real = store.release_lease
    failures: list[str] = []

    async def disk_full(lease: Any) -> None:
        failures.append(lease.thread_id)
        raise StoreIOError(str(tmp_path), "release a lease in", OSError(28, "No space left"))

    monkeypatch.setattr(store, "release_lease", disk_full)
    assert (await rig.run("a", thread_id="t")).final_text == "one"
    assert failures == ["t"]
    monkeypatch.setattr(store, "release_lease", real)
    # Without the retry the 60 s lease would make this ThreadBusy.
    assert (await rig.run("b", thread_id="t")).final_text == "two"
