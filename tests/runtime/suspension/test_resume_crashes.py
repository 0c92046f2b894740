"""Crash safety during resumes (issue 16, Done-when): 20 seeded SIGKILLs per persistent
backend while a resumer process runs, each followed by recovery in a fresh runtime.

Each round parks one call on its own thread, starts a resumer process and kills it
at a seeded moment (before its claim, between the claim and the call's result, or
after). A fresh runtime then recovers the thread once the dead lease lapsed:
resuming the ticket if it is still pending, else a new run. Checked every round:
the call executed at most once, it has exactly one result (never "not executed"
for a call that may have run), the thread is not left parked, and no message is
stored twice.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Approve, ResumeRejected, ScopeBinding, ThreadBusy
from awaken_runtime.stores import open_store

PROC = Path(__file__).parent / "procs" / "race_proc.py"
_spec = importlib.util.spec_from_file_location("race_proc_kills", PROC)
assert _spec is not None and _spec.loader is not None
race = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(race)

KILLS = 20


async def _closing(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        await close()


async def _park(url: str, thread_id: str) -> str:
    store = open_store(url)
    runtime = race.build_runtime(store, lambda _id: None, race.PARK_TURNS)
    try:
        (ticket,) = (await runtime.run(race.AGENT, "pay 5", thread_id=thread_id)).tickets
    finally:
        await _closing(store)
    return str(ticket.model_dump_json())


async def _load(url: str, thread_id: str) -> Any:
    store = open_store(url)
    try:
        return await store.load(ScopeBinding(thread_id, "default", "default"))
    finally:
        await _closing(store)


def _kill_resumer(url: str, ticket_file: Path, exec_file: Path, delay: float) -> None:
    child = subprocess.Popen(
        [sys.executable, str(PROC), "crash-resume", url, str(ticket_file), str(exec_file)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)


async def _recover(url: str, thread_id: str, executed: Any) -> None:
    """Resume a still pending ticket, else run again (which recovers a stranded run)."""
    store = open_store(url)
    try:
        await _recover_on(store, thread_id, executed)
    finally:
        await _closing(store)


async def _recover_on(store: Any, thread_id: str, executed: Any) -> None:
    runtime = race.build_runtime(store, executed, ["recovered", "again"])
    binding = ScopeBinding(thread_id, "default", "default")
    for _ in range(300):
        snap = await runtime.store.load(binding)
        try:
            if snap.parked is not None and snap.parked.tickets:
                await runtime.resume(snap.parked.tickets[0], Approve())
            elif snap.parked is not None or (
                snap.latest_run is not None and snap.latest_run.phase.value == "running"
            ):
                await runtime.run(race.AGENT, "after the crash", thread_id=thread_id)
            else:
                return
        except ThreadBusy:
            await asyncio.sleep(0.05)  # the dead resumer's lease has not lapsed yet
        except ResumeRejected:
            # Postgres finishes a COMMIT the killed resumer sent before it died: its claim
            # can land after our load, so the ticket we read is no longer pending. Look again.
            await asyncio.sleep(0.05)
    raise AssertionError(f"thread {thread_id!r} was never recovered")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A private schema on the test server (awaken-store-postgres's ``postgresql://``)."""
    dsn = os.environ.get("AWAKEN_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip(
            "AWAKEN_TEST_POSTGRES_DSN is not set (e.g. postgresql://postgres@127.0.0.1/test)"
        )
    pytest.importorskip("awaken_store_postgres")
    import psycopg

    schema = "awaken_kill_" + os.urandom(5).hex()
    yield f"{dsn}?schema={schema}&lease_ttl=0.3"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "file", "postgres"])
def test_seeded_kills_during_resumes_lose_nothing_and_run_nothing_twice(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
    elif backend == "sqlite":
        url = f"sqlite:///{tmp_path}/awaken.db?lease_ttl=0.3"
    else:
        url = f"file://{tmp_path}/files?lease_ttl=0.3"
    rng = random.Random(1600 + len(backend))
    outcomes: list[str] = []
    for round_no in range(KILLS):
        thread_id = f"t-kill-{round_no}"
        ticket_file, exec_file = tmp_path / f"ticket{round_no}", tmp_path / f"exec{round_no}"
        ticket_file.write_text(asyncio.run(_park(url, thread_id)))
        _kill_resumer(url, ticket_file, exec_file, rng.uniform(0.0, 0.25))

        def executed(call_id: str, exec_file: Path = exec_file) -> None:
            with exec_file.open("a") as f:
                f.write(f"recovery {call_id}\n")

        asyncio.run(_recover(url, thread_id, executed))
        runs = exec_file.read_text().splitlines() if exec_file.exists() else []
        assert len(runs) <= 1, f"round {round_no}: the call ran {len(runs)} times: {runs}"
        snap = asyncio.run(_load(url, thread_id))
        assert snap.parked is None, f"round {round_no}: the thread is stranded"
        ids = [m.id for m in snap.messages]
        assert len(ids) == len(set(ids)), f"round {round_no}: a message was stored twice"
        results = [m.text for m in snap.messages if m.role == "tool" and m.tool_call_id == "pay"]
        assert len(results) == 1, f"round {round_no}: {results}"
        if runs:
            assert results[0] == "moved 5" or "outcome of the call is unknown" in results[0]
        else:
            assert "moved" not in results[0]
        ran_by = (
            "nobody" if not runs else "recovery" if runs[0].startswith("recovery") else "resumer"
        )
        kind = "unknown" if "unknown" in results[0] else results[0]
        outcomes.append(f"{kind}, run by {ran_by}")
    # The seeded delays reach more than one kill point (who ran the call, and how it ended).
    assert len(set(outcomes)) > 1, outcomes
