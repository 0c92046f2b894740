"""The crash windows issue 51 found without a test (Build 8), one test each.

Each fails with the named hand mutant of the safety code in place:

- a resume of several tickets claims them all before anything runs
  (``Resumer.claim``; mutant: ``claimed = set(ticket_ids[:1])``);
- a thread re-parked under other scopes between the two loads of a resume is
  refused (``load_parked``; mutant: the re-check removed);
- after a renewal the inline lease check falls due before the lease expires
  (``LeaseGuard.renew``; mutant: ``ttl / 3`` -> ``ttl * 3``), and the
  background renewal keeps a yielding run's lease (``guard_lease``; same mutant
  on its period);
- a renewal the store itself fails keeps the lease while it lives, retries soon,
  and loses it once expired (``LeaseGuard.renew``'s ``except Exception``
  branch; mutants: the retry moment ``ttl / 30`` -> ``ttl * 30``, the expiry
  check inverted or removed).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from awaken_runtime import (
    Approve,
    AwaitReason,
    CapabilityBound,
    Contributions,
    InMemoryStore,
    Phase,
    ResumeRejected,
    ScopeBinding,
    ScriptedTurn,
    Suspend,
    ThreadBusy,
    ToolCall,
    ToolCallContext,
)
from awaken_runtime.runtime._tickets import load_parked
from awaken_runtime.stores import LeaseLost
from awaken_runtime.stores._lease import LeaseGuard, guard_lease

THREAD = "t-window"


def _gated_pay(make_plugin: Any) -> Any:
    def gate(ctx: Any, call: ToolCall) -> Any:
        return Suspend(await_reason=AwaitReason.TOOL_PERMISSION) if call.name == "pay" else None

    return make_plugin(
        "ask-pay", CapabilityBound(tool_gates=True), Contributions(tool_gates=[gate])
    )


def _two_payments() -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[
            ToolCall(id="c1", name="pay", arguments={"n": 1}),
            ToolCall(id="c2", name="pay", arguments={"n": 2}),
        ]
    )


async def test_a_resume_of_several_tickets_claims_them_all_before_anything_runs(
    make_runtime: Any, make_plugin: Any
) -> None:
    store = InMemoryStore()
    stored_while_paying: list[list[str]] = []

    async def pay(n: int, ctx: ToolCallContext) -> str:
        """Pay."""
        snap = await store.load(ScopeBinding(THREAD, "default", "default"))
        parked = snap.parked
        stored_while_paying.append(sorted(t.ticket_id for t in parked.tickets) if parked else [])
        return f"paid {n}"

    rig = make_runtime(
        [_two_payments(), "done"], tools=[pay], plugins=[_gated_pay(make_plugin)], store=store
    )
    state = await rig.run("go", thread_id=THREAD)
    assert state.phase is Phase.WAITING and len(state.tickets) == 2
    done = await rig.runtime.resume_many([(t, Approve()) for t in state.tickets])
    assert done.end_cause is not None and done.end_cause.kind == "natural_end"
    # Neither ticket was still stored while the first call ran: a second resumer (on a
    # store without leases) could otherwise claim the other one meanwhile.
    assert stored_while_paying == [[], []]


async def test_a_thread_re_parked_under_other_scopes_between_two_loads_is_refused(
    make_runtime: Any, make_plugin: Any
) -> None:
    async def pay(n: int) -> str:
        """Pay."""
        return f"paid {n}"

    rig = make_runtime([_two_payments(), "done"], tools=[pay], plugins=[_gated_pay(make_plugin)])
    state = await rig.run("go", thread_id=THREAD, profile_id="alice")
    assert state.phase is Phase.WAITING
    real = rig.store

    class Reparking:
        """The first load sees the run parked for alice; the second, re-parked for bob."""

        def __init__(self, reparked: bool) -> None:
            self.reparked = reparked
            self.loads: list[ScopeBinding] = []

        async def load(self, binding: ScopeBinding) -> Any:
            self.loads.append(binding)
            snap = await real.load(binding)
            if self.reparked and len(self.loads) == 2 and snap.parked is not None:
                snap.parked = snap.parked.model_copy(update={"profile_id": "bob"})
            return snap

    steady = Reparking(reparked=False)
    snap, parked = await load_parked(steady, THREAD)
    assert [b.profile_id for b in steady.loads] == ["default", "alice"]
    assert parked.profile_id == "alice" and snap.parked == parked

    moved = Reparking(reparked=True)
    with pytest.raises(ResumeRejected, match="re-parked"):
        await load_parked(moved, THREAD)


async def test_after_a_renewal_the_inline_check_falls_due_before_the_lease_expires() -> None:
    store = InMemoryStore()
    ttl = 30.0
    guard = LeaseGuard(store, await store.acquire_lease(THREAD, "h", ttl), ttl)
    assert guard.check_at < guard.lease.expires_at
    await guard.renew()
    assert guard.lost is None
    # The run renews inline once the clock passes check_at: past the expiry, another
    # holder could take the thread before the run noticed.
    assert time.time() < guard.check_at < guard.lease.expires_at
    await guard.ensure()  # not due: nothing happens
    assert guard.lost is None


@pytest.mark.slow
async def test_the_background_renewal_keeps_a_yielding_runs_lease() -> None:
    store = InMemoryStore()
    ttl = 3.0
    async with guard_lease(store, THREAD, "h", ttl) as guard:
        assert guard is not None
        await asyncio.sleep(ttl * 1.4)  # the run awaits (a model, a tool): renewals run
        with pytest.raises(ThreadBusy):
            await store.acquire_lease(THREAD, "thief", ttl)
        assert guard.lost is None


class FailingRenewals(InMemoryStore):
    """Renewals fail (the disk is full, the network is down) while ``failing``."""

    failing = False

    async def renew_lease(self, lease: Any, ttl: float) -> Any:
        if self.failing:
            raise OSError("disk full")
        return await super().renew_lease(lease, ttl)


async def test_a_renewal_the_store_fails_keeps_a_live_lease_and_retries_soon() -> None:
    store = FailingRenewals()
    ttl = 30.0
    guard = LeaseGuard(store, await store.acquire_lease(THREAD, "h", ttl), ttl)
    store.failing = True
    before = time.time()
    await guard.renew()
    assert guard.lost is None, "a live lease was given up because one renewal failed"
    # Retried well before it expires (not at the expiry, when it is too late).
    assert before < guard.check_at < guard.lease.expires_at - ttl / 2
    store.failing = False
    await guard.renew()
    assert guard.lost is None and guard.lease.expires_at > before + ttl / 2


async def test_a_renewal_the_store_fails_past_the_expiry_loses_the_lease() -> None:
    store = FailingRenewals()
    ttl = 0.05
    guard = LeaseGuard(store, await store.acquire_lease(THREAD, "h", ttl), ttl)
    store.failing = True
    while time.time() < guard.lease.expires_at:
        await asyncio.sleep(ttl / 2)
    with pytest.raises(LeaseLost, match=r"could not be renewed \(OSError: disk full\)"):
        await guard.ensure()
    assert guard.lost is not None and guard.check_at == float("-inf")
