"""A holder paused past its lease writes nothing more; the holder that took over finishes
the run (issue 51, Build 1), on SQLite, the file store and Postgres.

Process A runs a five-step run and is stopped (SIGSTOP) inside step 2's call,
past its lease. This process takes the run over (``continue_run``): its copy
of step 2's call wakes A (SIGCONT) and waits until A has exited, so A wakes
*before* the new holder commits anything, the window where A's commits used
to pass the version check: A's step, then its "lease lost" end record, and the
new holder then failed too. Now every commit of a run is fenced by its lease:
A writes nothing after its lease was taken, and the run ends ``natural_end``
with each step's result once and the answer once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Phase, ScopeBinding
from awaken_runtime.stores import open_store

PROC = Path(__file__).with_name("paused_holder.py")
_spec = importlib.util.spec_from_file_location("paused_holder", PROC)
assert _spec is not None and _spec.loader is not None
rig: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rig)

TTL = 1.0
THREAD = "t-paused"


@pytest.fixture(params=["sqlite", "file", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind = request.param
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'paused.db'}?lease_ttl={TTL}"
    elif kind == "file":
        yield f"file://{tmp_path / 'paused'}?lease_ttl={TTL}"
    else:
        dsn = os.environ.get("AWAKEN_TEST_POSTGRES_DSN")
        if not dsn:
            pytest.skip("AWAKEN_TEST_POSTGRES_DSN is not set")
        import psycopg

        schema = "awaken_paused_" + os.urandom(5).hex()
        yield f"{dsn}?schema={schema}&lease_ttl={TTL}"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def _wait_for(path: Path, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, f"the paused holder exited before {what}"
        assert time.monotonic() < deadline, f"no {what} in 60 s"
        time.sleep(0.01)


@pytest.mark.slow
async def test_a_paused_holder_writes_nothing_and_the_new_holder_finishes(
    store_url: str, tmp_path: Path
) -> None:
    mark, out = tmp_path / "mark", tmp_path / "out.json"
    holder = subprocess.Popen(
        [sys.executable, str(PROC), store_url, THREAD, str(mark), str(out)],
        stderr=subprocess.PIPE,
    )
    woken = False
    try:
        _wait_for(mark, holder, "step 2")
        holder.send_signal(signal.SIGSTOP)
        await asyncio.sleep(TTL * 1.5)  # its lease lapses

        async def on_step(step: int, result: str) -> str:
            nonlocal woken
            if step == 2 and not woken:
                # The old holder wakes now, before this holder has committed anything.
                woken = True
                holder.send_signal(signal.SIGCONT)
                await asyncio.to_thread(holder.wait, 60)
            return result

        store = open_store(store_url)
        try:
            runtime = rig.build_runtime(store, on_step)
            state = await runtime.continue_run(THREAD)
            snap = await store.load(ScopeBinding(THREAD, "default", "default"))
            record = await store.get_run("run-paused")
        finally:
            await store.close()
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
        holder.wait()
    assert woken, "the new holder never re-ran the call in flight"
    assert holder.returncode == 0, holder.stderr.read() if holder.stderr else ""

    paused = json.loads(out.read_text())
    assert paused["end_cause"]["kind"] == "error", paused["end_cause"]
    assert paused["end_cause"]["failure"]["kind"] == "lease_lost", paused["end_cause"]
    # Its step 2 executed, but the thread was no longer its own: not recorded by it.
    unrecorded = paused["end_cause"]["failure"]["unrecorded_call_ids"]
    assert len(unrecorded) == 1, unrecorded

    assert state is not None and state.phase is Phase.ENDED
    assert state.end_cause.kind == "natural_end", state.end_cause
    assert record is not None and record.end_cause.kind == "natural_end", record.end_cause
    assert [m.text for m in snap.messages if m.role == "user"] == ["go"]
    results = [m.text for m in snap.messages if m.role == "tool"]
    assert results == [f"step {k} done" for k in range(1, 6)], results
    calls = [c.id for m in snap.messages if m.role == "assistant" for c in m.tool_calls or ()]
    assert len(calls) == 5 and unrecorded[0] not in calls, (calls, unrecorded)
    answers = [m.text for m in snap.messages if m.role == "assistant" and m.text]
    assert answers == ["done"], answers
