"""A crash during a resume does not strand the thread (issue 16, item 3), and a run
whose process died does not stay RUNNING (item 4).

A resumer process claims the last ticket, starts the tool and is SIGKILLed there.
The thread stays parked with no ticket left. Once the dead process's lease has
lapsed, the next ``run`` (or ``cancel_waiting``) on the thread recovers it: the
stranded run ends ``Error(AbandonedFailure)``, the model is told the claimed
call's outcome is unknown (it may have run), never that it was not executed,
and the call is not executed again.
"""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Error, Phase, ScopeBinding, ThreadBusy
from awaken_runtime.stores import SQLiteStore

PROC = Path(__file__).parent / "procs" / "race_proc.py"
_spec = importlib.util.spec_from_file_location("race_proc_crash", PROC)
assert _spec is not None and _spec.loader is not None
race = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(race)

TTL = 1.0
BINDING = ScopeBinding(race.THREAD, "default", "default")


def _kill_in_tool(proc: subprocess.Popen[bytes], exec_file: Path) -> None:
    """SIGKILL ``proc`` once its tool recorded an execution (it then blocks there)."""
    deadline = time.monotonic() + 60
    while not (exec_file.exists() and exec_file.read_text()):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the process never reached the tool"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def _killed_mid_resume(tmp_path: Path) -> tuple[Path, Path]:
    """Park, then resume in a process killed inside the tool; (db, exec_file)."""
    db, ticket, go, exec_file = (tmp_path / n for n in ("c.db", "t.json", "go", "exec.txt"))
    park = subprocess.run(
        [sys.executable, str(PROC), "park", str(db), str(ticket)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert park.returncode == 0, park.stderr
    go.touch()
    args = ["resume", db, tmp_path / "o.json", ticket, go, exec_file, "hang", f"ttl:{TTL}"]
    proc = subprocess.Popen([sys.executable, str(PROC), *map(str, args)], stderr=subprocess.PIPE)
    _kill_in_tool(proc, exec_file)
    return db, exec_file


def _snapshot(db: Path) -> Any:
    return asyncio.run(SQLiteStore(db).load(BINDING))


async def _after_lapse(store: Any, action: Any) -> Any:
    """``action()`` once the dead holder's lease lapsed (ThreadBusy until then)."""
    for _ in range(200):
        try:
            return await action()
        except ThreadBusy:
            await asyncio.sleep(TTL / 10)
    raise AssertionError("the dead process's lease never lapsed")


def test_the_stranded_thread_is_parked_with_no_ticket(tmp_path: Path) -> None:
    db, exec_file = _killed_mid_resume(tmp_path)
    snap = _snapshot(db)
    assert snap.parked is not None and snap.parked.tickets == []
    assert len(exec_file.read_text().splitlines()) == 1


@pytest.mark.parametrize("how", ["run", "cancel_waiting"])
def test_the_next_run_or_cancel_recovers_it_and_tells_the_model_the_truth(
    tmp_path: Path, how: str
) -> None:
    db, exec_file = _killed_mid_resume(tmp_path)
    stranded_run = _snapshot(db).parked.run_id
    executed: list[str] = []
    store = SQLiteStore(db, lease_ttl=TTL)
    runtime = race.build_runtime(store, executed.append, ["hello again"])

    async def act() -> Any:
        if how == "run":
            return await runtime.run(race.AGENT, "next", thread_id=race.THREAD)
        return await runtime.cancel_waiting(race.THREAD)

    state = asyncio.run(_after_lapse(store, act))
    assert executed == [], "the claimed call ran again"
    assert len(exec_file.read_text().splitlines()) == 1
    snap = _snapshot(db)
    assert snap.parked is None
    results = [(m.tool_call_id, m.text) for m in snap.messages if m.role == "tool"]
    assert len(results) == 1 and results[0][0] == "pay"
    assert "outcome of the call is unknown" in results[0][1]
    assert "not executed" not in results[0][1]
    runs = asyncio.run(store.list_runs(race.THREAD))
    old = next(r for r in runs if r.run_id == stranded_run)
    assert old.phase is Phase.ENDED
    if how == "run":
        assert isinstance(old.end_cause, Error) and old.end_cause.failure.kind == "abandoned"
        assert state.final_text == "hello again" and state.run_id != stranded_run
    else:
        assert old.end_cause is not None and old.end_cause.kind == "cancelled"


def test_a_run_whose_process_died_is_marked_ended_and_can_be_pruned(tmp_path: Path) -> None:
    """Issue 16, item 4: a RUNNING record of a dead process does not stay RUNNING forever."""
    from datetime import UTC, datetime, timedelta

    db, exec_file = tmp_path / "d.db", tmp_path / "exec.txt"
    proc = subprocess.Popen(
        [sys.executable, str(PROC), "run-hang", str(db), str(exec_file), str(TTL)],
        stderr=subprocess.PIPE,
    )
    _kill_in_tool(proc, exec_file)
    dead = _snapshot(db).latest_run
    assert dead is not None and dead.phase is Phase.RUNNING

    store = SQLiteStore(db, lease_ttl=TTL)
    executed: list[str] = []
    runtime = race.build_runtime(store, executed.append, ["fresh start"], gate=False)
    state = asyncio.run(
        _after_lapse(store, lambda: runtime.run(race.AGENT, "again", thread_id=race.THREAD))
    )
    assert state.final_text == "fresh start" and executed == []
    record = asyncio.run(store.get_run(dead.run_id))
    assert record is not None and record.phase is Phase.ENDED
    assert isinstance(record.end_cause, Error) and record.end_cause.failure.kind == "abandoned"
    # The dead run's unfinished step was never stored: no result pairs with its call.
    snap = _snapshot(db)
    assert [m.text for m in snap.messages if m.role == "user"] == ["pay 5", "again"]
    assert not [m for m in snap.messages if m.role == "tool"]
    report = asyncio.run(store.prune(datetime.now(UTC) + timedelta(seconds=5)))
    assert report.runs == 1
    assert asyncio.run(store.get_run(dead.run_id)) is None
