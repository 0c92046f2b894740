"""Exactly once under racing resumes (issue 16, item 1): a resume checks and claims its
tickets against one and the same stored version.

Two resumers of one ticket over a store with only the thread-store port (no lease)
end with one execution of the tool; the loser gets ``ResumeRejected`` before it
executes anything. The interleaving that broke it: resumer B reads the thread, A
checks, claims and runs the call, then B (still holding what it read before A's
claim) checks against that stale read but claimed against a fresh load, so its
claim commit succeeded and it ran the tool a second time.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import (
    Approve,
    InMemoryStore,
    Phase,
    ResumeRejected,
    ScopeBinding,
    ThreadBusy,
)
from awaken_runtime.stores import SQLiteStore

PROC = Path(__file__).parent / "procs" / "race_proc.py"
_spec = importlib.util.spec_from_file_location("race_proc", PROC)
assert _spec is not None and _spec.loader is not None
race = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(race)

THREAD = race.THREAD


async def _parked(store: Any) -> Any:
    runtime = race.build_runtime(store, lambda _id: None, race.PARK_TURNS)
    (ticket,) = (await runtime.run(race.AGENT, "pay 5", thread_id=THREAD)).tickets
    return ticket


def _tool_messages(snapshot: Any) -> list[tuple[str | None, str]]:
    return [(m.tool_call_id, m.text) for m in snapshot.messages if m.role == "tool"]


async def _assert_paid_once(inner: Any) -> None:
    """Stored state after the race: one result for the call, the run ended, nothing parked."""
    snap = await inner.load(ScopeBinding(THREAD, "default", "default"))
    assert _tool_messages(snap) == [("pay", "moved 5")]
    assert snap.parked is None
    assert snap.latest_run is not None and snap.latest_run.phase is Phase.ENDED


SPELLINGS = {
    "model": lambda t: t,
    "json": lambda t: t.model_dump_json(),
    "dict": lambda t: t.model_dump(mode="json"),
}


# Per resumer, how its loads stall (see PortOnlyStore): a negative number yields to the
# event loop that many times. ``(-40,)`` for B is the stale read described above.
INTERLEAVINGS = [
    ((), ()),
    ((), (-1,)),
    ((), (-3,)),
    ((), (-40,)),
    ((-2,), (-40,)),
    ((), (0, -40)),
    ((-5, -5), (-1, -1)),
    ((), (0.01,)),
]


@pytest.mark.parametrize(("stall_a", "stall_b"), INTERLEAVINGS)
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
async def test_two_resumers_on_a_store_without_leases_execute_the_call_once(
    stall_a: tuple[float, ...], stall_b: tuple[float, ...], spelling: str
) -> None:
    inner = InMemoryStore()
    ticket = await _parked(inner)
    executed: list[tuple[str, str]] = []
    workers = [
        race.build_runtime(
            race.PortOnlyStore(inner, stall),
            lambda call_id, name=name: executed.append((name, call_id)),
            race.RESUME_TURNS,
        )
        for name, stall in (("a", stall_a), ("b", stall_b))
    ]
    given = SPELLINGS[spelling](ticket)
    results = await asyncio.gather(
        *(w.resume(given, Approve()) for w in workers), return_exceptions=True
    )
    assert len(executed) == 1, f"the tool ran {len(executed)} times: {executed}"
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(winners) == 1 and winners[0].phase is Phase.ENDED, results
    # No lease on this store: the loser is refused by the claim, as a typed rejection.
    assert len(losers) == 1 and type(losers[0]) is ResumeRejected, losers
    # The loser is the one that did not execute.
    winner_name = "a" if results[0] is winners[0] else "b"
    assert executed == [(winner_name, "pay")]
    await _assert_paid_once(inner)


async def test_a_stale_resumer_is_rejected_before_it_executes_anything() -> None:
    """The stale resumer runs after the winner finished: it executes nothing and changes
    nothing in the store."""
    inner = InMemoryStore()
    ticket = await _parked(inner)
    executed: list[str] = []
    gate = asyncio.Event()

    class Paused(race.PortOnlyStore):
        async def load(self, binding: ScopeBinding) -> Any:
            snapshot = await self.inner.load(binding)
            if self.loads == 0:
                await gate.wait()  # hold the read while the other resumer wins
            self.loads += 1
            return snapshot

    slow = race.build_runtime(Paused(inner), executed.append, race.RESUME_TURNS)
    fast = race.build_runtime(race.PortOnlyStore(inner), executed.append, race.RESUME_TURNS)
    slow_task = asyncio.ensure_future(slow.resume(ticket, Approve()))
    await asyncio.sleep(0)
    state = await fast.resume(ticket, Approve())
    assert state.phase is Phase.ENDED and executed == ["pay"]
    before = await inner.load(ScopeBinding(THREAD, "default", "default"))
    gate.set()
    with pytest.raises(ResumeRejected, match=r"not pending|claimed them first"):
        await slow_task
    after = await inner.load(ScopeBinding(THREAD, "default", "default"))
    assert executed == ["pay"]
    assert after.version == before.version
    assert _tool_messages(after) == [("pay", "moved 5")]


def _run(*args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PROC), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(proc: subprocess.Popen[str]) -> None:
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err


@pytest.mark.parametrize(
    "flags",
    [(), ("port-only",), ("port-only", "0.4")],
    ids=["sqlite_with_lease", "port_only", "port_only_one_stale_read"],
)
def test_two_processes_resuming_one_ticket_on_sqlite_execute_it_once(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    db, ticket_file = tmp_path / "race.db", tmp_path / "ticket.json"
    go, exec_file = tmp_path / "go", tmp_path / "executed.txt"
    _wait(_run("park", db, ticket_file))
    # The second process (only) gets the stale first read, so it loses to the first.
    procs = [
        _run("resume", db, tmp_path / f"out{i}.json", ticket_file, go, exec_file, *fl)
        for i, fl in enumerate([flags[:1], flags])
    ]
    go.touch()
    for proc in procs:
        _wait(proc)
    reports = [json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2)]
    lines = exec_file.read_text().splitlines() if exec_file.exists() else []
    assert len(lines) == 1, f"the tool ran {len(lines)} times: {lines}"
    assert sorted("rejected" in r for r in reports) == [False, True], reports
    (loser,) = [r for r in reports if "rejected" in r]
    expected = (
        {ResumeRejected.__name__}
        if "port-only" in flags
        else {
            ResumeRejected.__name__,
            ThreadBusy.__name__,
        }
    )
    assert loser["rejected"] in expected, loser
    asyncio.run(_assert_paid_once(SQLiteStore(db)))
