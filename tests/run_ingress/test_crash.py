"""Crash test (issues 27 and 51, Done-when): 3 worker processes, 30 runs of 5 steps, 20+
seeded SIGKILLs of workers mid-run and mid-continuation, and 10+ seeded SIGSTOP/SIGCONT
pauses longer than the lease (some longer than the heartbeat too, so the job moves to
another worker while the paused one still holds the run in memory).

Checked afterwards, per run: it ended exactly once (``natural_end``), its thread
holds the input once, each of the 5 steps' results once and in order, and the
final answer once; the test's own ledger (unique per run and step, keyed by the
idempotency key) holds every step. Its event log ends with its one ``RunFinish``
(``natural_end``, the answer), holds no finish of a leg that lost its lease, and
``tail_events`` returns for it. Recovery time after a kill is the gap between a
killed worker's last step of a run and the next worker's first step of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from awaken_run_ingress import RunIngress
from awaken_runtime import Phase, ScopeBinding
from awaken_runtime.stores import open_store

from .conftest import Schemas

RUNS, WORKERS, KILLS, PAUSES = 30, 3, 22, 11
HEARTBEAT, LEASE = 2.0, 1.5


def _worker(schemas: Schemas) -> subprocess.Popen[str]:
    """A worker process, returned once it is taking jobs."""
    proc = subprocess.Popen(
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
            schemas.store_url(LEASE),
            "--setup",
            "ingress_agents:configure",
            "--concurrency",
            "2",
            "--heartbeat-timeout",
            str(HEARTBEAT),
        ],
        env=schemas.env(AWAKEN_INGRESS_STEP_S="0.5"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("awaken worker:"), f"the worker did not start: {line!r}"
    return proc


async def _submit(schemas: Schemas) -> list[str]:
    async with RunIngress(schemas.dsn, schema=schemas.queue) as ingress:
        return [
            (await ingress.submit("stepper", "go", thread_id=f"t-{i}")).run_id for i in range(RUNS)
        ]


async def _ended(schemas: Schemas, run_ids: list[str]) -> int:
    store = open_store(schemas.store_url(LEASE))
    try:
        records = [await store.get_run(r) for r in run_ids]
    finally:
        await store.close()
    return sum(1 for r in records if r is not None and r.phase is Phase.ENDED)


async def _threads(schemas: Schemas, run_ids: list[str]) -> list[tuple[Any, Any]]:
    store = open_store(schemas.store_url(LEASE))
    try:
        out = []
        for i, run_id in enumerate(run_ids):
            snap = await store.load(ScopeBinding(f"t-{i}", "default", "default"))
            out.append((snap, await store.get_run(run_id)))
        return out
    finally:
        await store.close()


async def _logs(schemas: Schemas, run_ids: list[str]) -> list[tuple[list[Any], int]]:
    """Each run's logged events (their data) and how many ``tail_events`` yielded before
    it returned (bounded: a follower that would wait forever fails the test)."""
    store = open_store(schemas.store_url(LEASE))
    try:
        out = []
        for run_id in run_ids:

            async def follow(run_id: str = run_id) -> int:
                return len([e async for e in store.tail_events(run_id, idle=0.5)])

            tailed = await asyncio.wait_for(follow(), 60)
            events = [e.data for e in await store.read_events(run_id, 0, 10_000)]
            out.append((events, tailed))
        return out
    finally:
        await store.close()


def _rows(schemas: Schemas, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(schemas.dsn, options=f"-c search_path={schemas.ledger}") as conn:
        return list(conn.execute(sql.encode()))


@pytest.mark.slow
def test_killed_and_paused_workers_lose_no_step_and_repeat_none(schemas: Schemas) -> None:
    run_ids = asyncio.run(_submit(schemas))
    rng = random.Random(2700)
    workers = [_worker(schemas) for _ in range(WORKERS)]
    kills, paused, started = 0, 0, time.monotonic()
    try:
        while time.monotonic() - started < 400:
            if kills < KILLS or paused < PAUSES:
                time.sleep(rng.uniform(0.4, 1.4))  # each kill lands on a worker with runs
                victim = rng.randrange(WORKERS)
                if paused < PAUSES and (kills >= KILLS or rng.random() < 0.35):
                    # A zombie: stopped past its lease (and at times its heartbeat, so its
                    # job moves on), then woken up: it must write nothing more.
                    workers[victim].send_signal(signal.SIGSTOP)
                    time.sleep(rng.uniform(LEASE + 0.3, HEARTBEAT + LEASE + 1.0))
                    workers[victim].send_signal(signal.SIGCONT)
                    paused += 1
                    continue
                workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait(timeout=30)
                kills += 1
                workers[victim] = _worker(schemas)
            else:
                time.sleep(0.5)
                if asyncio.run(_ended(schemas, run_ids)) == RUNS:
                    break
        assert kills >= 20 and paused >= 10
        assert asyncio.run(_ended(schemas, run_ids)) == RUNS, "not every run ended in 400 s"
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGCONT)
                w.terminate()
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()

    for i, (snap, record) in enumerate(asyncio.run(_threads(schemas, run_ids))):
        assert record.phase is Phase.ENDED and record.end_cause.kind == "natural_end", (
            i,
            record.end_cause,
        )
        ids = [m.id for m in snap.messages]
        assert len(ids) == len(set(ids)), f"run {i}: a message was stored twice"
        assert [m.text for m in snap.messages if m.role == "user"] == ["go"], f"run {i}"
        results = [m.text for m in snap.messages if m.role == "tool"]
        assert results == [f"step {k} done" for k in range(1, 6)], f"run {i}: {results}"
        answers = [m.text for m in snap.messages if m.role == "assistant" and m.text]
        assert answers == ["done"], f"run {i}: {answers}"
    unlogged_steps = 0
    for i, (events, tailed) in enumerate(asyncio.run(_logs(schemas, run_ids))):
        finishes = [e for e in events if e["type"] == "run_finish"]
        assert finishes, f"run {i}: its event log never finished"
        assert events[-1] is finishes[-1] and len(finishes) == 1, f"run {i}: {finishes}"
        assert finishes[0]["end_cause"]["kind"] == "natural_end", finishes[0]
        assert finishes[0]["final_text"] == "done", finishes[0]
        assert tailed == len(events), f"run {i}: tail_events did not return its whole log"
        steps = {e["step"] for e in events if e["type"] == "step_end"}
        unlogged_steps += len(set(range(1, 7)) - steps)
    ledger = _rows(schemas, "SELECT run_id, step FROM ledger")
    assert sorted(ledger) == sorted((r, s) for r in run_ids for s in range(1, 6))

    executions = _rows(schemas, "SELECT run_id, step, pid, at FROM executions ORDER BY at")
    repeated = len(executions) - len(ledger)
    gaps: list[float] = []
    last: dict[str, tuple[int, float]] = {}
    for run_id, _step, pid, at in executions:
        before = last.get(run_id)
        if before is not None and before[0] != pid:
            gaps.append(at - before[1])
        last[run_id] = (pid, at)
    report = {
        "runs": RUNS,
        "kills": kills,
        "pauses": paused,
        "steps committed but missing from the event log (killed between)": unlogged_steps,
        "steps re-executed after a kill (in flight)": repeated,
        "takeovers": len(gaps),
        "recovery s median": round(statistics.median(gaps), 2) if gaps else None,
        "recovery s max": round(max(gaps), 2) if gaps else None,
        "wall s": round(time.monotonic() - started, 1),
    }
    print("\ningress crash test:", json.dumps(report))
    artifacts = os.environ.get("AWAKEN_TEST_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        (Path(artifacts) / "ingress_crash.json").write_text(json.dumps(report, indent=2))
    assert gaps, "no run was ever taken over: the kills missed every run"
