"""Hostile ids: NUL characters are refused with a typed error, SQL in ids is just text."""

from __future__ import annotations

import pytest

from awaken_runtime import Command, Message, Scope, ScopeBinding
from awaken_runtime.stores import StreamEvent
from awaken_store_conformance import batch
from awaken_store_postgres import PostgresStore, UnstorableText


async def test_a_nul_in_an_id_is_refused_and_nothing_is_written(store: PostgresStore) -> None:
    bad = ScopeBinding("thread\x00x", "p", "n")
    with pytest.raises(UnstorableText, match="NUL") as info:
        await store.commit(bad, 0, [Message.user("hi")], [batch(Command.set("k", 1))])
    assert isinstance(info.value, ValueError) and "commit thread" in str(info.value)
    good = ScopeBinding("thread", "p", "n")
    await store.commit(good, 0, [Message.user("a")], [])
    with pytest.raises(UnstorableText):
        await store.commit(good, 1, [Message.user("b", id="m\x00")], [batch(Command.set("k", 2))])
    with pytest.raises(UnstorableText):
        await store.append_events("run\x00", [StreamEvent(seq=1, data={})])
    with pytest.raises(UnstorableText):
        await store.acquire_lease("thread", "holder\x00", 10)
    snap = await store.load(good)
    assert (snap.version, [m.text for m in snap.messages], snap.state) == (1, ["a"], {})
    assert [t.thread_id for t in await store.list_threads()] == ["thread"]
    # NUL inside state keys, fields and values is data, and round-trips.
    key = "k\x00ey"
    await store.commit(good, 1, [], [batch(Command.set(key, {"f\x00": "v\x00"}))])
    assert (await store.load(good)).state[(Scope.THREAD, key)] == {"f\x00": "v\x00"}


async def test_sql_in_ids_is_only_text(store: PostgresStore) -> None:
    evil = "t'; DROP TABLE threads; --"
    b = ScopeBinding(evil, "p' OR '1'='1", 'n"; DELETE FROM state; --')
    await store.commit(b, 0, [Message.user("x", id="'); DROP TABLE messages; --")], [])
    await store.write_scope(Scope.SHARED, b.namespace, [Command.set("doc", 1)])
    snap = await store.load(b)
    assert snap.version == 1 and snap.messages[0].id.startswith("');")
    assert await store.read_scope(Scope.SHARED, b.namespace) == {"doc": 1}
    assert await store.read_scope(Scope.SHARED, "anyone") == {}
    assert [t.thread_id for t in await store.list_threads()] == [evil]
