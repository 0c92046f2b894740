"""A damaged stored row is ``StoreCorrupt`` naming the database, the thing and its row.

Never a raw pydantic or JSON error: the parked run and latest run record a load
reads, batch pages, run records (got, listed, or met by a commit), event logs
and config versions. A commit that meets a damaged record of its run fails and
writes nothing. (Message rows: ``test_message_cache.py`` and ``test_lazy_load.py``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from awaken_runtime import Command, Message, Phase, ScopeBinding, ToolCall
from awaken_runtime.stores import StoreCorrupt, StreamEvent
from awaken_store_conformance import batch, parked_run, run_record
from awaken_store_postgres import PostgresStore

Sql = Callable[..., list[tuple[Any, ...]]]

B = ScopeBinding("t1", "p", "n")

BODIES = ['{"role": "wizard"}', "not json at all", "[]", "{}", '{"run_id": 1}']


def _assert_names(info: pytest.ExceptionInfo[StoreCorrupt], schema: str, what: str) -> None:
    error = info.value
    assert error.path == f"postgres schema {schema!r}"
    assert error.detail.startswith(what + " is not a valid "), error.detail
    assert error.__cause__ is None  # a summary of the decode error, not the error itself


async def _thread(store: PostgresStore) -> None:
    await store.commit(B, 0, [Message.user("m0")], [])
    await store.commit(B, 1, [Message.user("m1")], [])


@pytest.mark.parametrize("body", BODIES)
async def test_a_damaged_parked_run_fails_the_load_naming_it(
    store: PostgresStore, schema: str, body: str, sql: Sql
) -> None:
    call = ToolCall(id="c1", name="f")
    await store.commit(
        B, 0, [Message.assistant(None, [call])], [], parked=parked_run(B, "r1", [call])
    )
    assert (await store.load(B)).parked is not None
    sql("UPDATE threads SET parked=%s WHERE thread_id='t1'", body)
    with pytest.raises(StoreCorrupt) as info:
        await store.load(B)
    _assert_names(info, schema, "thread 't1' parked run")


@pytest.mark.parametrize("body", BODIES)
async def test_a_damaged_run_record_is_corrupt_wherever_it_is_read(
    store: PostgresStore, schema: str, body: str, sql: Sql
) -> None:
    await _thread(store)
    await store.commit(B, 2, [], [], run_record=run_record("r0", "t1"))
    await store.commit(B, 3, [], [], run_record=run_record("r1", "t1"))
    sql("UPDATE runs SET body=%s WHERE run_id='r1'", body)
    with pytest.raises(StoreCorrupt) as info:
        await store.load(B)
    _assert_names(info, schema, "thread 't1' latest run 'r1' record")
    with pytest.raises(StoreCorrupt) as info:
        await store.get_run("r1")
    _assert_names(info, schema, "run 'r1' record")
    with pytest.raises(StoreCorrupt) as info:
        await store.list_runs("t1")
    _assert_names(info, schema, "thread 't1' run 'r1' record")
    assert (await store.get_run("r0")) is not None  # the other records still read


@pytest.mark.parametrize("body", BODIES)
async def test_a_commit_meeting_a_damaged_record_of_its_run_writes_nothing(
    store: PostgresStore, dsn: str, schema: str, body: str, sql: Sql
) -> None:
    await _thread(store)
    await store.commit(B, 2, [], [], run_record=run_record("r1", "t1", Phase.RUNNING))
    before = await store.load(B)
    good = sql("SELECT body FROM runs WHERE run_id='r1'")[0][0]
    sql("UPDATE runs SET body=%s WHERE run_id='r1'", body)
    with pytest.raises(StoreCorrupt) as info:
        await store.commit(
            B,
            3,
            [Message.user("m2")],
            [batch(Command.set("k", 1))],
            run_record=run_record("r1", "t1"),
        )
    _assert_names(info, schema, "run 'r1' record")
    # The transaction rolled back: no version bump, message, batch, state or record.
    sql("UPDATE runs SET body=%s WHERE run_id='r1'", good)  # repaired
    after = await store.load(B)
    assert after.version == before.version == 3
    assert [m.text for m in after.messages] == ["m0", "m1"]
    assert after.state == {}
    assert (await store.read_batches("t1")).items == []
    assert (await store.get_run("r1")).phase is Phase.RUNNING  # type: ignore[union-attr]
    async with PostgresStore(dsn, schema=schema) as fresh:  # not only this store's view
        again = await fresh.load(B)
    assert again.version == 3 and [m.text for m in again.messages] == ["m0", "m1"]
    # The repaired record lets the same commit through.
    assert (
        await store.commit(B, 3, [Message.user("m2")], [], run_record=run_record("r1", "t1")) == 4
    )


@pytest.mark.parametrize("body", BODIES)
async def test_a_damaged_batch_row_is_corrupt_naming_its_number(
    store: PostgresStore, schema: str, body: str, sql: Sql
) -> None:
    for i in range(3):
        await store.commit(B, i, [], [batch(Command.set("k", i))])
    sql("UPDATE batches SET body=%s WHERE thread_id='t1' AND seq=2", body)
    with pytest.raises(StoreCorrupt) as info:
        await store.read_batches("t1")
    _assert_names(info, schema, "thread 't1' batch row 2")
    with pytest.raises(StoreCorrupt) as info:
        await store.read_batches("t1", after=1, limit=1)
    _assert_names(info, schema, "thread 't1' batch row 2")
    assert len((await store.read_batches("t1", after=2)).items) == 1  # later rows still read


@pytest.mark.parametrize("body", BODIES)
async def test_a_damaged_event_row_is_corrupt_naming_its_seq(
    store: PostgresStore, schema: str, body: str, sql: Sql
) -> None:
    await store.append_events("r1", [StreamEvent(seq=s, data={"n": s}) for s in (1, 3, 5)])
    sql("UPDATE events SET body=%s WHERE run_id='r1' AND seq=5", body)
    with pytest.raises(StoreCorrupt) as info:
        await store.read_events("r1")
    _assert_names(info, schema, "run 'r1' event seq 5")
    assert [e.seq for e in await store.read_events("r1", limit=2)] == [1, 3]


@pytest.mark.parametrize("body", BODIES)
async def test_a_damaged_config_version_is_corrupt_naming_it(
    store: PostgresStore, schema: str, body: str, sql: Sql
) -> None:
    for n in (1, 2):
        await store.publish_config({"id": "ag", "instructions": f"v{n}"})
    sql("UPDATE configs SET body=%s WHERE agent_id='ag' AND version=2", body)
    for read in (store.config_history("ag"), store.get_config("ag", 1)):
        with pytest.raises(StoreCorrupt) as info:
            await read
        _assert_names(info, schema, "agent 'ag' config version 2")
