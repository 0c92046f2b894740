"""Following a run's event log live from a process that did not run it (LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from awaken_runtime import AgentEvent, ScopeBinding, event_adapter
from awaken_runtime.stores import StreamEvent
from awaken_store_postgres import PostgresStore

SCRIPT = Path(__file__).with_name("pg_worker.py")


async def test_another_process_streams_a_run_live(dsn: str, schema: str, tmp_path: Path) -> None:
    store = await PostgresStore(dsn, schema=schema).open()
    gate = tmp_path / "gate"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        "run",
        dsn,
        schema,
        "run-live",
        str(gate),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[StreamEvent] = []
    alive_at_first_step: bool | None = None

    async def follow() -> None:
        nonlocal alive_at_first_step
        # `idle` far beyond the timeout below: only a NOTIFY can wake this tailer in time.
        async for event in store.tail_events("run-live", idle=600):
            seen.append(event)
            if event.data["type"] == "step_end" and alive_at_first_step is None:
                # Step 1 is committed; the child now blocks in step 2 until the gate opens.
                alive_at_first_step = child.returncode is None
                gate.touch()

    await asyncio.wait_for(follow(), 90)
    assert await asyncio.wait_for(child.wait(), 60) == 0
    assert alive_at_first_step is True
    events: list[AgentEvent] = [event_adapter.validate_python(e.data) for e in seen]
    assert events[0].type == "run_start" and events[-1].type == "run_finish"
    assert [e.type for e in events].count("step_end") == 3
    assert [e.seq for e in seen] == sorted({e.seq for e in seen})  # in order, none twice
    assert seen == await store.read_events("run-live")  # exactly the stored log
    snap = await store.load(ScopeBinding("tail-t", "default", "default"))
    assert snap.messages[-1].text == "all done" and snap.latest_run is not None
    await store.close()


async def test_tail_catches_up_then_follows_and_stops_at_the_finish(dsn: str, schema: str) -> None:
    writer = await PostgresStore(dsn, schema=schema).open()
    reader = await PostgresStore(dsn, schema=schema).open()
    await writer.append_events("r", [StreamEvent(seq=i, data={"type": "x"}) for i in (1, 2, 3)])
    got: list[int] = []

    async def follow() -> None:
        async for event in reader.tail_events("r", after=1, idle=600):
            got.append(event.seq)
            if event.seq == 3:  # caught up: now append live
                await writer.append_events("r", [StreamEvent(seq=4, data={"type": "x"})])
                await writer.append_events("other", [StreamEvent(seq=1, data={"type": "x"})])
                await writer.append_events("r", [StreamEvent(seq=7, data={"type": "run_finish"})])

    await asyncio.wait_for(follow(), 30)
    assert got == [2, 3, 4, 7]
    # Not until the finish: a log that already ended yields what it has, then stops.
    assert [e.seq async for e in reader.tail_events("r", after=3)] == [4, 7]
    await writer.close()
    await reader.close()


async def test_a_tail_in_another_schema_is_not_woken(dsn: str, schema: str) -> None:
    a = await PostgresStore(dsn, schema=schema).open()
    b = await PostgresStore(dsn, schema=schema + "_b").open()
    try:
        stream = a.tail_events("same-id", idle=600)
        waiting = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.2)  # let it LISTEN
        await b.append_events("same-id", [StreamEvent(seq=1, data={"type": "run_finish"})])
        await asyncio.sleep(0.3)
        assert not waiting.done()
        await a.append_events("same-id", [StreamEvent(seq=5, data={"type": "run_finish"})])
        assert (await asyncio.wait_for(waiting, 30)).seq == 5
        await stream.aclose()  # type: ignore[attr-defined]
    finally:
        await a.close()
        await b.close()
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema}_b CASCADE".encode())
