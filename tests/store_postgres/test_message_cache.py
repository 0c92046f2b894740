"""The Postgres store's decoded-message cache never serves rows that changed under it.

A load after the first fetches only rows appended since; any other change to
the kept rows (a hand edit or delete, the thread deleted and re-created by
another worker, rows rewritten with triggers off, as a restore does) makes
the next load fetch the thread again (each row decoded when first read).
"""

from __future__ import annotations

import psycopg
import pytest

from awaken_runtime import Message, ScopeBinding, ToolCall
from awaken_runtime.stores import StoreCorrupt
from awaken_store_postgres import PostgresStore
from awaken_store_postgres._schema import migrate

B = ScopeBinding("t1", "p", "n")


def _sql(dsn: str, schema: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"'.encode())
        for statement in statements:
            conn.execute(statement.encode())


async def _cached(store: PostgresStore, n: int = 3) -> list[Message]:
    messages = [Message.user(f"m{i}") for i in range(n)]
    for i, message in enumerate(messages):
        await store.commit(B, i, [message], [])
    assert (await store.load(B)).messages == messages  # now decoded and kept
    return messages


async def test_a_later_load_adds_only_the_new_rows_and_matches_a_fresh_store(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    messages = await _cached(store)
    call = ToolCall(id="c1", name="f", arguments={"a": [1, None, {"b": 2.5}], "c": True})
    more = [Message.assistant(None, [call]), Message.tool("c1", "ok")]
    await store.commit(B, 3, more, [])
    snap = await store.load(B)
    async with PostgresStore(dsn, schema=schema) as fresh:
        again = await fresh.load(B)
    assert snap.messages == messages + more == again.messages
    assert snap.call_ids == again.call_ids == {"c1"}
    await store.commit(B, 4, [Message.assistant(None, [ToolCall(id="c2", name="f")])], [])
    latest = await store.load(B)
    assert latest.call_ids == {"c1", "c2"}
    assert (await store.load(B)).messages == latest.messages  # nothing new
    async with PostgresStore(dsn, schema=schema) as fresh:
        assert (await fresh.load(B)).messages == latest.messages


async def test_a_hand_edited_kept_row_is_seen(store: PostgresStore, dsn: str, schema: str) -> None:
    messages = await _cached(store)
    edited = Message.user("edited", id=messages[1].id)
    body = edited.model_dump_json().replace("'", "''")
    _sql(dsn, schema, f"UPDATE messages SET body='{body}' WHERE seq=2")
    assert (await store.load(B)).messages == [messages[0], edited, messages[2]]


async def test_a_kept_row_damaged_later_is_an_error(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    await _cached(store)
    _sql(dsn, schema, """UPDATE messages SET body='{"role": "wizard"}' WHERE seq=2""")
    snap = await store.load(B)  # the thread is fetched again, each row decoded when first read
    with pytest.raises(StoreCorrupt, match="thread 't1' message row 2"):
        list(snap.messages)


async def test_a_deleted_kept_row_is_seen(store: PostgresStore, dsn: str, schema: str) -> None:
    messages = await _cached(store)
    _sql(dsn, schema, "DELETE FROM messages WHERE seq=2")
    assert (await store.load(B)).messages == [messages[0], messages[2]]


async def test_an_upsert_over_a_kept_row_is_seen(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    messages = await _cached(store)
    other = Message.user("other", id=messages[1].id)
    _sql(
        dsn,
        schema,
        f"INSERT INTO messages VALUES ('t1', 2, '{other.id}', '{other.model_dump_json()}') "
        "ON CONFLICT (thread_id, seq) DO UPDATE SET body = excluded.body",
    )
    assert (await store.load(B)).messages == [messages[0], other, messages[2]]


async def test_a_thread_deleted_and_recreated_by_another_worker(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    await _cached(store)
    again = [Message.user(f"new {i}") for i in range(5)]
    async with PostgresStore(dsn, schema=schema) as other:
        assert await other.delete_thread("t1")
        await other.commit(B, 0, again, [])
    assert (await store.load(B)).messages == again


async def test_rows_rewritten_with_triggers_off(
    store: PostgresStore, dsn: str, schema: str
) -> None:
    # session_replication_role=replica is how pg_restore and replication write rows.
    await _cached(store)
    theirs = [Message.user(f"theirs {i}") for i in range(3)]
    rows = ", ".join(
        f"('t1', {i}, '{m.id}', '{m.model_dump_json()}')" for i, m in enumerate(theirs, 1)
    )
    _sql(
        dsn,
        schema,
        "SET session_replication_role = replica",
        "DELETE FROM messages WHERE thread_id='t1'",
        f"INSERT INTO messages VALUES {rows}",
    )
    assert (await store.load(B)).messages == theirs


async def test_the_edit_trigger_comes_with_the_migration(dsn: str, schema: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await migrate(conn, schema, target=1)
    async with PostgresStore(dsn, schema=schema) as store:
        messages = await _cached(store)
        _sql(dsn, schema, "DELETE FROM messages WHERE seq=1")
        assert (await store.load(B)).messages == messages[1:]
        await store.commit(B, 3, [Message.user("appended")], [])
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(f'SELECT thread_id, n FROM "{schema}".message_edits'.encode())
        assert cur.fetchall() == [("t1", 1)]  # the delete, not the appends


async def test_overlapping_loads_of_a_growing_thread_each_see_it_whole(
    store: PostgresStore,
) -> None:
    """Loads fetch, then decode: several in flight at once extend the same kept thread."""
    import asyncio

    messages = await _cached(store)
    more = [Message.assistant("a"), Message.user("b")]
    await store.commit(B, 3, more, [])
    loads = await asyncio.gather(*(store.load(B) for _ in range(4)))
    assert all(snap.messages == messages + more for snap in loads)
    last = Message.assistant("c")
    await store.commit(B, 4, [last], [])
    first, second = await asyncio.gather(store.load(B), store.load(B))
    assert first.messages == second.messages == messages + more + [last]
    assert (await store.load(B)).messages == messages + more + [last]
