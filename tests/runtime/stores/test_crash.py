"""Crash safety: SIGKILL a child mid-run, again and again; nothing committed is lost.

For SQLite and for the file store, a child process runs a long scripted run
on one thread and is killed with SIGKILL at a random (seeded) moment, 20
times. After each kill the parent checks the store: no duplicate message,
no gap in the steps, only whole steps, state equal to the replay of the
committed log, and at most the step in flight lost (every step the child
reported after its checkpoint is there). The next child continues the
thread in a fresh runtime (after the dead holder's short lease expires).
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Phase, Scope, replay
from awaken_runtime.stores import ScopeBinding, open_store

SCRIPT = Path(__file__).with_name("agent_script.py")
KILLS = 20
_spec = importlib.util.spec_from_file_location("awaken_agent_script", SCRIPT)
assert _spec is not None and _spec.loader is not None
agent_script: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agent_script)


def _run_until_killed(url: str, thread_id: str, delay: float) -> int:
    """Start a child, SIGKILL it ``delay`` s after it is ready; the last step it reported."""
    child = subprocess.Popen(
        [sys.executable, str(SCRIPT), "crash", url, thread_id],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    steps = [int(line.split()[1]) for line in out.splitlines() if line.startswith("step ")]
    return steps[-1] if steps else 0


async def _check(store: Any, thread_id: str, reported: int, before: int) -> int:
    snap = await store.load(ScopeBinding(thread_id, "default", "default"))
    ids = [m.id for m in snap.messages]
    assert len(ids) == len(set(ids)), "duplicate messages"
    ks: list[int] = []
    for i, message in enumerate(snap.messages):
        if message.role == "assistant" and not message.tool_calls:
            assert i == len(snap.messages) - 1 and message.text == "done"
        elif message.role == "assistant":
            (call,) = message.tool_calls or []
            result = snap.messages[i + 1]  # whole steps only: a call is always answered
            assert result.role == "tool" and result.tool_call_id == call.id
            ks.append(call.arguments["k"])
        else:
            assert message.role == "tool" or message.text == "go"
    assert ks == list(range(1, len(ks) + 1)), "a gap in the steps"
    done = len(ks)
    assert done >= before, "a committed step disappeared"
    assert reported <= done <= reported + 1 or (reported == 0 and done <= before + 1), (
        f"child reported step {reported}, store has {done}: more than the step in flight lost"
    )
    batches = (await store.read_batches(thread_id, limit=1_000_000)).items
    replayed = replay(batches).to_dict()
    thread_state = {k: v for k, v in snap.state.items() if k[0] is Scope.THREAD}
    assert thread_state == replayed, "state differs from the replay of the committed log"
    if done:
        assert snap.state[(Scope.THREAD, "count")] == done
        assert len(snap.state[(Scope.THREAD, "seen")]) == done
    return done


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_sigkill_loses_at_most_the_step_in_flight(kind: str, tmp_path: Path) -> None:
    rng = random.Random(f"crash-{kind}")
    url = (
        f"sqlite:///{tmp_path}/awaken.db?lease_ttl=0.3"
        if kind == "sqlite"
        else f"file://{tmp_path}/files?lease_ttl=0.3"
    )
    thread_id = "crash-thread"
    done = 0
    for _ in range(KILLS):
        reported = _run_until_killed(url, thread_id, rng.uniform(0.0, 0.12))
        store = open_store(url)
        done = await _check(store, thread_id, reported, done)
        await store.close()
    assert done > 0
    # A fresh runtime in this process continues the thread to a natural end.
    runtime = agent_script.build(open_store(url), finish=True)
    for _ in range(100):
        try:
            state = await runtime.run("worker", "go", thread_id=thread_id)
            break
        except Exception as exc:  # the last child's lease may still be live
            if type(exc).__name__ != "ThreadBusy":
                raise
            time.sleep(0.05)
    assert state.phase is Phase.ENDED and state.final_text == "done"
    await _check(runtime.store, thread_id, done, done)
