"""A hypothesis property over racing resumes (issue 16, Done-when): whatever the
interleaving of two resumers (their loads stalled at random), with or without a
lease, and wherever one of them is killed (its task cancelled at a random point),
the parked call executes at most once and, after recovery (a new run on the
thread, or a resume of a ticket still pending), ends exactly once.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from awaken_runtime import Approve, InMemoryStore, Phase, ResumeRejected, ScopeBinding, ThreadBusy

PROC = Path(__file__).parent / "procs" / "race_proc.py"
_spec = importlib.util.spec_from_file_location("race_proc_props", PROC)
assert _spec is not None and _spec.loader is not None
race = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(race)

BINDING = ScopeBinding(race.THREAD, "default", "default")
stalls = st.lists(st.integers(min_value=-30, max_value=0), max_size=3)


async def _assert_ended_once(inner: InMemoryStore, executed: list[str]) -> None:
    """After recovery: the call ran at most once, has one truthful result, nothing waits."""
    assert len(executed) <= 1, f"the call ran {len(executed)} times"
    snap = await inner.load(BINDING)
    assert snap.parked is None, "the thread is stranded"
    results_for_call = [
        m.text for m in snap.messages if m.role == "tool" and m.tool_call_id == "pay"
    ]
    assert len(results_for_call) == 1, results_for_call
    if executed:
        assert results_for_call[0] == "moved 5" or "unknown" in results_for_call[0]
    else:
        assert "moved" not in results_for_call[0]


async def _scenario(
    leases: bool, stall_a: list[int], stall_b: list[int], kill: int | None, victim: int = 1
) -> None:
    inner = InMemoryStore()
    parker = race.build_runtime(inner, lambda _id: None, race.PARK_TURNS)
    (ticket,) = (await parker.run(race.AGENT, "pay 5", thread_id=race.THREAD)).tickets
    executed: list[str] = []

    class SlowAck(race.PortOnlyStore):
        """Yields after each commit (a slow acknowledgement): a kill can land after the
        claim, or after the call ran and before its result is stored."""

        async def commit(self, *args: Any, **kwargs: Any) -> int:
            version = await super().commit(*args, **kwargs)
            await asyncio.sleep(0)
            return version

    def worker(stall: list[int]) -> Any:
        store = inner if leases and not stall else SlowAck(inner, stall)
        return race.build_runtime(store, executed.append, race.RESUME_TURNS)

    tasks = [asyncio.ensure_future(worker(s).resume(ticket, Approve())) for s in (stall_a, stall_b)]
    if kill is not None:
        for _ in range(kill):
            await asyncio.sleep(0)
        tasks[victim].cancel()  # a crash of that resumer at this point
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for r in results:
        assert not isinstance(r, BaseException) or isinstance(
            r, ResumeRejected | ThreadBusy | asyncio.CancelledError
        ), r
    assert len(executed) <= 1, f"the call ran {len(executed)} times"

    # Recovery: a pending ticket is resumed; a stranded thread is recovered by a new run.
    snap = await inner.load(BINDING)
    if snap.parked is not None and snap.parked.tickets:
        state = await worker([]).resume(snap.parked.tickets[0], Approve())
        assert state.phase is Phase.ENDED
    snap = await inner.load(BINDING)
    if snap.parked is not None:
        late = race.build_runtime(inner, executed.append, ["recovered"], gate=False)
        await late.run(race.AGENT, "again", thread_id=race.THREAD)
    await _assert_ended_once(inner, executed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    leases=st.booleans(),
    stall_a=stalls,
    stall_b=stalls,
    kill=st.none() | st.integers(min_value=0, max_value=40),
    victim=st.integers(min_value=0, max_value=1),
)
def test_racing_resumes_execute_at_most_once_and_end_exactly_once(
    leases: bool, stall_a: list[int], stall_b: list[int], kill: int | None, victim: int
) -> None:
    asyncio.run(_scenario(leases, stall_a, stall_b, kill, victim))


class LeasedSlow(race.PortOnlyStore):
    """The thread-store port with stalled loads and slow commit acknowledgements (so a
    lapse can land after the claim, mid-call), plus the inner store's leases."""

    lease_ttl = 30.0

    def __init__(self, inner: Any, stale_loads: list[int], acks: list[int]) -> None:
        super().__init__(inner, stale_loads)
        self.acks = list(acks)

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        version = await super().commit(*args, **kwargs)
        for _ in range(self.acks.pop(0) if self.acks else 0):
            await asyncio.sleep(0)
        return version

    async def acquire_lease(self, *args: Any) -> Any:
        return await self.inner.acquire_lease(*args)

    async def renew_lease(self, *args: Any) -> Any:
        return await self.inner.renew_lease(*args)

    async def release_lease(self, *args: Any) -> Any:
        return await self.inner.release_lease(*args)


def _lapse_leases(store: InMemoryStore) -> None:
    """The holder was paused past its ttl: its lease is expired in the store."""
    leases = store.core.leases
    for thread_id, lease in list(leases.items()):
        leases[thread_id] = lease.model_copy(update={"expires_at": 0.0})


async def _lapse_scenario(
    stall_a: list[int],
    stall_b: list[int],
    lapse: int,
    kill: int | None,
    victim: int,
    acks: list[int] = (),  # type: ignore[assignment]
    action: str = "resume",
) -> None:
    inner = InMemoryStore()
    parker = race.build_runtime(inner, lambda _id: None, race.PARK_TURNS)
    (ticket,) = (await parker.run(race.AGENT, "pay 5", thread_id=race.THREAD)).tickets
    executed: list[str] = []

    def worker(stall: list[int], slow: list[int] = ()) -> Any:  # type: ignore[assignment]
        store = LeasedSlow(inner, stall, list(slow))
        return race.build_runtime(store, executed.append, race.RESUME_TURNS)

    first = asyncio.ensure_future(worker(stall_a, acks).resume(ticket, Approve()))
    for _ in range(lapse):
        await asyncio.sleep(0)
    _lapse_leases(inner)  # the first resumer stalls past its ttl ...
    # ... and a second process takes the thread over: it resumes, runs or cancels.
    other = worker(stall_b)
    if action == "resume":
        second = asyncio.ensure_future(other.resume(ticket, Approve()))
    elif action == "run":
        second = asyncio.ensure_future(other.run(race.AGENT, "next", thread_id=race.THREAD))
    else:
        second = asyncio.ensure_future(other.cancel_waiting(race.THREAD))
    tasks = [first, second]
    if kill is not None:
        for _ in range(kill):
            await asyncio.sleep(0)
        tasks[victim].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for r in results:
        assert not isinstance(r, BaseException) or isinstance(
            r, ResumeRejected | ThreadBusy | asyncio.CancelledError
        ), repr(r)
    assert len(executed) <= 1, f"the call ran {len(executed)} times"

    snap = await inner.load(BINDING)
    if snap.parked is not None and snap.parked.tickets:
        await worker([]).resume(snap.parked.tickets[0], Approve())
    snap = await inner.load(BINDING)
    if snap.parked is not None or (snap.latest_run and snap.latest_run.phase is Phase.RUNNING):
        _lapse_leases(inner)  # a killed holder's lease lapses before recovery
        late = race.build_runtime(inner, executed.append, ["recovered"], gate=False)
        await late.run(race.AGENT, "again", thread_id=race.THREAD)
    await _assert_ended_once(inner, executed)
    runs = await inner.list_runs(race.THREAD)
    assert all(r.phase is Phase.ENDED for r in runs), [(r.run_id, r.phase) for r in runs]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stall_a=stalls,
    stall_b=stalls,
    lapse=st.integers(min_value=0, max_value=30),
    kill=st.none() | st.integers(min_value=0, max_value=40),
    victim=st.integers(min_value=0, max_value=1),
    acks=st.lists(st.integers(min_value=0, max_value=20), max_size=4),
    action=st.sampled_from(["resume", "run", "cancel"]),
)
# Found by this property: the second process took a lapsed lease and tried to end the
# first's RUNNING record while the first (paused, not dead) still committed.
@example(stall_a=[], stall_b=[-1], lapse=18, kill=None, victim=0, acks=[0, 0, 19], action="run")
# And: the first committed after the second's abandon attempt, so the second must not
# start a run over a record that is still RUNNING (it would stay RUNNING forever).
@example(stall_a=[], stall_b=[0, -1], lapse=1, kill=None, victim=0, acks=[0, 2, 1], action="run")
def test_a_lapsed_lease_raced_by_a_second_resumer_still_executes_at_most_once(
    stall_a: list[int],
    stall_b: list[int],
    lapse: int,
    kill: int | None,
    victim: int,
    acks: list[int],
    action: str,
) -> None:
    """Issue 16, Done-when: interleavings of two resumers, lease expiry and a kill point."""
    asyncio.run(_lapse_scenario(stall_a, stall_b, lapse, kill, victim, acks, action))
