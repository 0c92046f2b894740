"""The ingress in one process: submit, work, decisions, cancels, duplicates."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from awaken_run_ingress import RunIngress, Worker
from awaken_runtime import AgentRuntimeBuilder, Approve, Phase, ScheduledAction, ScopeBinding
from awaken_runtime.stores import open_store

sys.path.insert(0, str(Path(__file__).parent))
import ingress_agents

from .conftest import Schemas


def _runtime(schemas: Schemas) -> Any:
    builder = AgentRuntimeBuilder(discover=False).with_store(open_store(schemas.store_url()))
    ingress_agents.configure(builder.with_progress_records())
    return builder.build()


@pytest.fixture
def env(schemas: Schemas, monkeypatch: pytest.MonkeyPatch) -> Schemas:
    monkeypatch.setenv("AWAKEN_INGRESS_LEDGER", schemas.dsn)
    monkeypatch.setenv("AWAKEN_INGRESS_LEDGER_SCHEMA", schemas.ledger)
    monkeypatch.setenv("AWAKEN_INGRESS_STEP_S", "0.0")
    return schemas


@pytest.fixture
async def ingress(env: Schemas) -> AsyncIterator[RunIngress]:
    async with RunIngress(env.dsn, schema=env.queue) as opened:
        yield opened


async def _drain(env: Schemas, **kw: Any) -> Any:
    runtime = _runtime(env)
    worker = Worker(
        runtime, env.dsn, schema=env.queue, heartbeat_timeout=timedelta(seconds=5), **kw
    )
    await asyncio.wait_for(worker.run(drain=True), 60)
    return runtime


def _ledger(env: Schemas) -> list[tuple[str, int]]:
    with psycopg.connect(env.dsn, options=f"-c search_path={env.ledger}") as conn:
        return [(r, s) for r, s in conn.execute("SELECT run_id, step FROM ledger ORDER BY 1, 2")]


async def test_a_submitted_run_is_run_by_a_worker(env: Schemas, ingress: RunIngress) -> None:
    submitted = await ingress.submit("stepper", "go", thread_id="t-1")
    assert submitted.thread_id == "t-1" and submitted.run_id.startswith("run_")
    runtime = await _drain(env)
    record = await runtime.store.get_run(submitted.run_id)
    assert record is not None and record.phase is Phase.ENDED
    assert record.end_cause is not None and record.end_cause.kind == "natural_end"
    assert _ledger(env) == [(submitted.run_id, s) for s in range(1, 6)]


async def test_a_repeated_submission_runs_once(env: Schemas, ingress: RunIngress) -> None:
    first = await ingress.submit("stepper", "go", thread_id="t-1", run_id="run-fixed")
    again = await ingress.submit("stepper", "go", thread_id="t-1", run_id="run-fixed")
    assert first.run_id == again.run_id == "run-fixed"
    runtime = await _drain(env)
    # Delivered again after it ended: nothing runs twice.
    await ingress.submit("stepper", "go", thread_id="t-1", run_id="run-fixed")
    await _drain(env)
    snap = await runtime.store.load(ScopeBinding("t-1", "default", "default"))
    assert [m.text for m in snap.messages if m.role == "user"] == ["go"]
    assert len(_ledger(env)) == 5


async def test_a_cancel_before_the_start_keeps_the_run_from_starting(
    env: Schemas, ingress: RunIngress
) -> None:
    submitted = await ingress.submit("stepper", "go", thread_id="t-c")
    await ingress.cancel(submitted.run_id)
    runtime = await _drain(env)
    assert await runtime.store.get_run(submitted.run_id) is None
    assert _ledger(env) == []


async def test_a_cancel_reaches_the_worker_running_the_run(
    env: Schemas, ingress: RunIngress, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWAKEN_INGRESS_STEP_S", "0.3")
    submitted = await ingress.submit("stepper", "go", thread_id="t-live")
    runtime = _runtime(env)
    worker = Worker(runtime, env.dsn, schema=env.queue)
    task = asyncio.ensure_future(worker.run())
    for _ in range(200):
        if submitted.run_id in worker.live:
            break
        await asyncio.sleep(0.05)
    assert submitted.run_id in worker.live
    await ingress.cancel(submitted.run_id)
    for _ in range(200):
        record = await runtime.store.get_run(submitted.run_id)
        if record is not None and record.phase is Phase.ENDED:
            break
        await asyncio.sleep(0.05)
    worker.stop()
    await asyncio.wait_for(task, 30)
    assert record is not None and record.end_cause is not None
    assert record.end_cause.kind == "cancelled"
    assert len(_ledger(env)) < 5


async def test_decisions_resume_a_waiting_run_and_a_duplicate_collapses(
    env: Schemas, ingress: RunIngress
) -> None:
    submitted = await ingress.submit("careful", "go", thread_id="t-wait")
    runtime = await _drain(env)
    record = await runtime.store.get_run(submitted.run_id)
    assert record is not None and record.phase is Phase.WAITING
    snap = await runtime.store.load(ScopeBinding("t-wait", "default", "default"))
    assert snap.parked is not None
    (ticket,) = snap.parked.tickets
    await ingress.decide(ticket, Approve())
    await ingress.decide(ticket, Approve())  # the same decision again: collapses
    await _drain(env)
    await ingress.decide(ticket, Approve())  # after the run went on: rejected, changes nothing
    await _drain(env)
    record = await runtime.store.get_run(submitted.run_id)
    assert record is not None and record.phase is Phase.ENDED
    assert _ledger(env) == [(submitted.run_id, s) for s in range(1, 6)]
    with psycopg.connect(env.dsn, options=f"-c search_path={env.ledger}") as conn:
        (count,) = conn.execute("SELECT count(*) FROM executions WHERE step = 3").fetchone()
    assert count == 1


async def test_a_wake_up_queued_twice_is_one_job_and_one_without_a_time_is_none(
    env: Schemas, ingress: RunIngress
) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    timed = [ScheduledAction(name="remind", at=later), ScheduledAction(name="remind")]
    first = await ingress.wake("reminder", "t-w", "run-ended", timed)
    again = await ingress.wake("reminder", "t-w", "run-ended", list(reversed(timed)))
    assert first is not None and again is not None and first.run_id == again.run_id
    assert await ingress.wake("reminder", "t-w", "run-other", [ScheduledAction(name="x")]) is None
    with psycopg.connect(env.dsn) as conn:
        (count,) = conn.execute(  # type: ignore[misc]
            f'SELECT count(*) FROM "{env.queue}".pgqueuer WHERE entrypoint = %s'.encode(),
            ("awaken.run.reminder",),
        ).fetchone()
    assert count == 1, "a redelivered wake-up must not queue a second run"
