"""A first load fetches a thread's rows and decodes a message only when something reads it.

As the SQLite and file stores do (tests/runtime/stores/test_lazy_load.py): the
tool-call ids come from the ``tool_calls`` table and the kept rows' ends from
the ``msg_id`` column, so nothing is decoded to load or keep the thread. A
damaged row is ``StoreCorrupt`` naming the thread and the row where it is
first read: when read for rows fetched undecoded, at the load for rows
appended to a kept thread (those are decoded as they are fetched).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from awaken_runtime import Message, ScopeBinding, ToolCall
from awaken_runtime.stores import (
    DuplicateMessageId,
    StoreCorrupt,
    StoredMessages,
    UnmatchedToolResult,
)
from awaken_store_conformance import tool_history
from awaken_store_postgres import PostgresStore

Sql = Callable[..., list[tuple[Any, ...]]]

B = ScopeBinding("t1", "p", "n")
N = 600

DAMAGED = [
    '{"role": "wizard"}',
    "not json at all",
    '{"role": "user", "content": 5}',
    "[]",
    '{"role": "user", "content": "a\x1eb"}',  # a raw control character: not JSON
]


async def _three(store: PostgresStore) -> None:
    for i in range(3):
        await store.commit(B, i, [Message.user(f"m{i}")], [])


def _names_row(error: pytest.ExceptionInfo[StoreCorrupt], row: int, schema: str) -> bool:
    text = str(error.value)
    return f"thread 't1' message row {row}" in text and schema in text


async def _seeded(store: PostgresStore, n: int = N) -> list[Message]:
    history = tool_history(n)
    version = 0
    for i in range(0, n, 50):
        version = await store.commit(B, version, history[i : i + 50], [])
    return history


async def test_a_first_load_decodes_nothing_and_equals_the_thread(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    history = await _seeded(store)
    async with PostgresStore(dsn, schema=schema) as fresh:
        snap = await fresh.load(B)
        messages = snap.messages
        assert isinstance(messages, StoredMessages)
        assert messages.undecoded == N
        assert snap.call_ids == {f"call-{i}" for i in range(N // 3)}
        assert messages[-1] == history[-1]
        assert N - 128 <= messages.undecoded < N  # a tail, not the thread
        assert messages == history
        assert messages.undecoded == 0


async def test_a_later_load_decodes_only_the_appended_rows(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    history = await _seeded(store)
    async with PostgresStore(dsn, schema=schema) as fresh:
        await fresh.load(B)
        call = ToolCall(id="call-new", name="lookup")
        more = [Message.assistant(None, [call]), Message.tool("call-new", "ok")]
        await fresh.commit(B, N // 50, more, [])
        snap = await fresh.load(B)
        assert snap.messages.undecoded == N  # type: ignore[attr-defined]
        assert "call-new" in snap.call_ids and len(snap.call_ids) == N // 3 + 1
        assert snap.messages == history + more


async def test_commit_checks_hold_on_a_thread_nobody_decoded(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    history = await _seeded(store)
    async with PostgresStore(dsn, schema=schema) as fresh:
        version = (await fresh.load(B)).version
        with pytest.raises(DuplicateMessageId):
            await fresh.commit(B, version, [Message.user("again", id=history[7].id)], [])
        with pytest.raises(UnmatchedToolResult):
            await fresh.commit(B, version, [Message.tool("call-unknown", "x")], [])
        # A result may answer a call stored long ago, in rows nobody decoded.
        late = [Message.tool("call-3", "late result")]
        assert await fresh.commit(B, version, late, []) == version + 1
        assert (await fresh.load(B)).messages.undecoded == N  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", DAMAGED)
async def test_a_damaged_row_fetched_undecoded_is_corrupt_when_read(
    store: PostgresStore, dsn: str, schema: str, body: str, sql: Sql
) -> None:
    await _three(store)
    sql("UPDATE messages SET body=%s WHERE thread_id='t1' AND seq=2", body)
    async with PostgresStore(dsn, schema=schema) as fresh:
        snap = await fresh.load(B)  # fetching is not decoding: the load succeeds
        for read in (lambda: list(snap.messages), lambda: snap.messages[1]):
            with pytest.raises(StoreCorrupt) as info:
                read()
            assert _names_row(info, 2, schema)
        assert snap.messages[2].text == "m2"  # the rows after it still decode
        with pytest.raises(StoreCorrupt, match="thread 't1' message row 2"):
            await fresh.read_messages("t1")


@pytest.mark.parametrize("body", DAMAGED)
async def test_a_damaged_row_appended_to_a_kept_thread_is_corrupt_at_load(
    store: PostgresStore, schema: str, body: str, sql: Sql
) -> None:
    await _three(store)
    assert [m.text for m in (await store.load(B)).messages] == ["m0", "m1", "m2"]
    # An insert is not an edit (no trigger counts it): the next load fetches only it.
    sql("INSERT INTO messages VALUES ('t1', 4, 'bad', %s)", body)
    for _ in range(2):  # nothing of it was kept: it fails again
        with pytest.raises(StoreCorrupt) as info:
            await store.load(B)
        assert _names_row(info, 4, schema)
    sql("DELETE FROM messages WHERE thread_id='t1' AND seq=4")
    assert [m.text for m in (await store.load(B)).messages] == ["m0", "m1", "m2"]
