"""A run's event log always ends (issue 51, Build 2), on every store.

A streamed run logs its events after the commits they describe. The process
here "dies" (a ``BaseException`` from the store's ``append_events``, caught by
nothing) at two points: with the final step's events, and with the
``RunFinish``. The run is ``ENDED`` in the store, its log stops short. The
next reader (``Runtime.read_events``; on Postgres also ``tail_events``, which
used to wait forever) finishes the log from the committed record: the final
step's events rebuilt from the thread, then the record's ``RunFinish``. Once.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Phase, ScriptedTurn, ToolCall, finish_event_log
from awaken_runtime.stores import open_store

THREAD = "t-log"


class Killed(BaseException):
    """The process died here."""


@pytest.fixture(params=["memory", "file", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    kind = request.param
    schema = None
    if kind == "memory":
        url = "memory://"
    elif kind == "file":
        url = f"file://{tmp_path / 'files'}"
    elif kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'log.db'}"
    else:
        dsn = os.environ.get("AWAKEN_TEST_POSTGRES_DSN")
        if not dsn:
            pytest.skip("AWAKEN_TEST_POSTGRES_DSN is not set")
        schema = "awaken_log_" + os.urandom(5).hex()
        url = f"{dsn}?schema={schema}"
    opened = open_store(url)
    yield opened
    await opened.close()
    if schema is not None:
        import psycopg

        with psycopg.connect(os.environ["AWAKEN_TEST_POSTGRES_DSN"], autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


class DyingLog:
    """``store`` whose event log append dies once on the batch holding ``kill_at``."""

    def __init__(self, store: Any, kill_at: str) -> None:
        self._store, self.kill_at, self.armed = store, kill_at, True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def read_events(self, run_id: str, after: int = 0, limit: int = 1000) -> Any:
        return await self._store.read_events(run_id, after, limit)

    async def append_events(self, run_id: str, events: Any) -> None:
        types = [e.data["type"] for e in events]
        hit = _final(events) if self.kill_at == "step_end" else self.kill_at in types
        if self.armed and hit:
            self.armed = False
            # The kill lands after the run's end record (the window under test): the run
            # goes on in its task while this append waits.
            for _ in range(500):
                record = await self._store.get_run(run_id)
                if record is not None and record.phase is Phase.ENDED:
                    break
                await asyncio.sleep(0.01)
            raise Killed
        await self._store.append_events(run_id, events)


def _final(events: Any) -> bool:
    return any(e.data["type"] == "step_end" and e.data["step"] == 2 for e in events)


def _turns() -> list[Any]:
    call = ToolCall(id="c1", name="look", arguments={"n": 1})
    return [ScriptedTurn(text="looking", tool_calls=[call]), "the answer"]


def look(n: int) -> str:
    """Look."""
    return f"looked {n}"


@pytest.mark.parametrize("kill_at", ["step_end", "run_finish"])
async def test_a_log_cut_short_after_the_run_ended_is_finished_by_its_reader(
    make_runtime: Any, store: Any, kill_at: str
) -> None:
    dying = DyingLog(store, kill_at)
    rig = make_runtime(_turns(), tools=[look], chunk_size=3)
    rig.runtime.store = dying
    streamed: list[Any] = []
    with pytest.raises(Killed):
        async for event in rig.runtime.stream(rig.agent_id, "go", thread_id=THREAD):
            streamed.append(event)
    run_id = streamed[0].run_id
    record = await store.get_run(run_id)
    assert record is not None and record.phase is Phase.ENDED
    cut = [e.data["type"] for e in await store.read_events(run_id)]
    assert cut[-1] == "step_end", cut

    if hasattr(store, "tail_events"):  # Postgres: its follower used to wait forever
        tailed = [e async for e in store.tail_events(run_id, idle=0.2)]
        assert tailed[-1].data["type"] == "run_finish"
    events = await rig.runtime.read_events(run_id)
    types = [e.type for e in events]
    assert types[: len(cut)] == cut, "the repair changed what was logged"
    assert types[-1] == "run_finish" and types.count("run_finish") == 1, types
    finish = events[-1]
    assert finish.phase is Phase.ENDED and finish.end_cause.kind == "natural_end"
    assert finish.final_text == "the answer" and finish.usage == record.usage
    steps = [e.step for e in events if e.type == "step_end"]
    assert steps == [1, 2], steps
    last_start = max(i for i, t in enumerate(types) if t == "step_start")
    final_step = events[last_start:]
    assert [e.step for e in final_step if e.type in ("step_start", "step_end")] == [2, 2]
    text = "".join(e.delta for e in final_step if e.type == "text_delta")
    assert text == "the answer", final_step
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs)), "seqs must strictly increase"
    # Once: a second reader (or the redelivered job) finds the log ended.
    assert await finish_event_log(store, run_id) is False
    assert len(await rig.runtime.read_events(run_id)) == len(events)


async def test_a_run_still_running_or_never_logged_is_left_alone(
    make_runtime: Any, store: Any
) -> None:
    rig = make_runtime(_turns(), tools=[look])
    rig.runtime.store = store
    state = await rig.run("go", thread_id=THREAD)  # not streamed: no log was started
    assert await finish_event_log(store, state.run_id) is False
    assert await store.read_events(state.run_id) == []
    assert await finish_event_log(store, "no-such-run") is False
