"""Worker processes: a scheduled wake-up survives a worker restart and never comes early;
a worker refuses a store whose schema is newer than it knows."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from awaken_run_ingress import RunIngress
from awaken_runtime import AwaitReason, Phase, Scope, ScopeBinding
from awaken_runtime.stores import open_store
from awaken_store_postgres import SCHEMA_VERSION

from .conftest import Schemas


def _start(schemas: Schemas, setup: str, stderr: Any = subprocess.DEVNULL, **env: str) -> Any:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "awaken_run_ingress",
            "worker",
            "--queue",
            schemas.dsn,
            "--schema",
            schemas.queue,
            "--store",
            schemas.store_url(1.0),
            "--setup",
            setup,
            "--heartbeat-timeout",
            "2",
        ],
        env=schemas.env(**env),
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


async def _state(schemas: Schemas, thread_id: str, run_id: str) -> tuple[Any, Any]:
    store = open_store(schemas.store_url(1.0))
    try:
        # The record first: a thread loaded after it is at least as new, so a run the
        # record shows waiting has its parked run in the snapshot (the other order raced
        # a worker parking the run between the two reads).
        record = await store.get_run(run_id)
        return await store.load(ScopeBinding(thread_id, "default", "default")), record
    finally:
        await store.close()


def _wait(schemas: Schemas, thread_id: str, run_id: str, phase: Phase, limit: float) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        snap, record = asyncio.run(_state(schemas, thread_id, run_id))
        if record is not None and record.phase is phase:
            return snap, record
        if record is not None and record.phase is Phase.ENDED and phase is not Phase.ENDED:
            raise AssertionError(f"run {run_id} ended {record.end_cause} before {phase.value}")
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never reached {phase.value} in {limit} s")


async def _submit(schemas: Schemas, agent: str, thread_id: str) -> str:
    async with RunIngress(schemas.dsn, schema=schemas.queue) as ingress:
        return (await ingress.submit(agent, "go", thread_id=thread_id)).run_id


@pytest.mark.slow
def test_a_scheduled_wake_up_is_not_early_and_survives_a_worker_restart(
    schemas: Schemas,
) -> None:
    env = {"AWAKEN_INGRESS_DELAY_S": "3", "AWAKEN_INGRESS_STEP_S": "0"}
    run_id = asyncio.run(_submit(schemas, "patient", "t-later"))
    first = _start(schemas, "ingress_agents:configure_patient", **env)
    try:
        snap, _ = _wait(schemas, "t-later", run_id, Phase.WAITING, 60)
    finally:
        first.send_signal(signal.SIGKILL)  # the worker that queued the wake-up dies
        first.wait(timeout=30)
    (ticket,) = snap.parked.tickets
    assert ticket.await_reason is AwaitReason.SCHEDULED_ACTION and ticket.not_before
    time.sleep(1.0)
    second = _start(schemas, "ingress_agents:configure_patient", **env)
    try:
        _, record = _wait(schemas, "t-later", run_id, Phase.ENDED, 60)
    finally:
        second.terminate()
        second.wait(timeout=30)
    assert record.end_cause.kind == "natural_end"
    with psycopg.connect(schemas.dsn, options=f"-c search_path={schemas.ledger}") as conn:
        rows = list(conn.execute(b"SELECT step, at FROM executions ORDER BY step"))
    assert [step for step, _ in rows] == [1, 2, 3, 4, 5]
    (at,) = [at for step, at in rows if step == 3]
    assert datetime.fromtimestamp(at, UTC) >= ticket.not_before, "the call ran early"


@pytest.mark.slow
def test_a_worker_refuses_a_store_with_a_newer_schema(schemas: Schemas) -> None:
    async def migrate() -> None:
        store = open_store(schemas.store_url())
        await store.open()
        await store.close()

    asyncio.run(migrate())
    with psycopg.connect(schemas.dsn, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{schemas.store}".awaken_schema SET version = {SCHEMA_VERSION + 1}'.encode()
        )
    worker = _start(schemas, "ingress_agents:configure", stderr=subprocess.PIPE)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 1
    assert "awaken worker:" not in out
    assert f"version {SCHEMA_VERSION + 1}" in err and "error:" in err


@pytest.mark.slow
def test_a_cancel_reaches_a_run_on_another_workers_process(schemas: Schemas) -> None:
    run_id = asyncio.run(_submit(schemas, "stepper", "t-cancel"))
    worker = _start(schemas, "ingress_agents:configure", AWAKEN_INGRESS_STEP_S="1.0")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # running on the worker, step 1 in flight
            _, record = asyncio.run(_state(schemas, "t-cancel", run_id))
            if record is not None and record.phase is Phase.RUNNING:
                break
            time.sleep(0.05)

        async def cancel() -> None:
            async with RunIngress(schemas.dsn, schema=schemas.queue) as ingress:
                await ingress.cancel(run_id)

        asyncio.run(cancel())
        _, record = _wait(schemas, "t-cancel", run_id, Phase.ENDED, 30)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert record.end_cause.kind == "cancelled"
    assert record.steps < 5


@pytest.mark.slow
def test_a_ticket_past_its_deadline_cancels_the_waiting_run(schemas: Schemas) -> None:
    run_id = asyncio.run(_submit(schemas, "asker", "t-deadline"))
    worker = _start(schemas, "ingress_agents:configure_asking", AWAKEN_INGRESS_DEADLINE_S="2")
    try:
        snap, _ = _wait(schemas, "t-deadline", run_id, Phase.WAITING, 60)
        (ticket,) = snap.parked.tickets
        _, record = _wait(schemas, "t-deadline", run_id, Phase.ENDED, 60)
        ended_at = datetime.now(UTC)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert ticket.deadline is not None and ended_at >= ticket.deadline, "cancelled early"
    assert record.end_cause.kind == "cancelled"


@pytest.mark.slow
def test_a_time_based_action_wakes_an_ended_run_once_never_early_across_a_restart(
    schemas: Schemas,
) -> None:
    env = {"AWAKEN_INGRESS_DELAY_S": "3"}
    run_id = asyncio.run(_submit(schemas, "reminder", "t-remind"))
    first = _start(schemas, "ingress_agents:configure_reminders", **env)
    try:
        snap, record = _wait(schemas, "t-remind", run_id, Phase.ENDED, 60)
    finally:
        first.send_signal(signal.SIGKILL)  # the worker that queued the wake-up dies
        first.wait(timeout=30)
    assert record.end_cause.kind == "natural_end"
    due = datetime.fromisoformat(snap.state[(Scope.THREAD, "reminders.scheduled_for")])
    time.sleep(0.5)
    second = _start(schemas, "ingress_agents:configure_reminders", **env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            snap, _ = asyncio.run(_state(schemas, "t-remind", run_id))
            if [m.content for m in snap.messages if m.role == "assistant"][-1:] == ["reminded"]:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the reminder never woke the thread")
        time.sleep(1.0)  # a second wake-up, if any were queued, would have run by now
    finally:
        second.terminate()
        second.wait(timeout=30)
    with psycopg.connect(schemas.dsn, options=f"-c search_path={schemas.ledger}") as conn:
        rows = list(conn.execute(b"SELECT run_id, at FROM executions"))
    assert [r for r, _ in rows] == ["t-remind"], "the reminder ran more or less than once"
    assert datetime.fromtimestamp(rows[0][1], UTC) >= due, "the reminder ran early"
    texts = [m.content for m in snap.messages if m.role == "assistant"]
    assert texts == ["noted", "reminded"]
