"""Parking a run (issue #3, SPEC 3.7): a gate's ``Suspend`` or a tool's ``SuspendCall``
parks the run with a ticket, a new run on a waiting thread is ``ThreadBusy``, and a
``Schedule`` parks until its time.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from suspension_rig import (
    AGENT,
    THREAD,
    assert_rejected,
    build,
    calls_turn,
    parked_of,
    snapshot,
    summary,
    tool_results,
)

from awaken_runtime import (
    Approve,
    AwaitReason,
    NaturalEnd,
    Phase,
    ResumeTicket,
    ThreadBusy,
    ToolCall,
)

# -- parking ----------------------------------------------------------------------------


@pytest.mark.parametrize("reason", list(AwaitReason))
async def test_gate_suspend_parks_the_run(reason: AwaitReason) -> None:
    rig = build([calls_turn(("g1", "wait_for", {"reason": reason.value})), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)

    assert state.phase is Phase.WAITING
    assert state.end_cause is None
    assert len(state.tickets) == 1
    ticket = state.tickets[0]
    assert ticket.run_id == state.run_id
    assert ticket.thread_id == THREAD
    assert ticket.fingerprint == rig.runtime.resolve(AGENT).fingerprint
    assert ticket.await_reason is reason
    assert ticket.call == ToolCall(id="g1", name="wait_for", arguments={"reason": reason.value})
    assert ticket.payload == {"why": reason.value}
    assert ticket.deadline is None and ticket.not_before is None
    assert ticket.signature is None
    assert rig.executed == []

    parked = await parked_of(rig)
    assert parked is not None
    assert parked.run_id == state.run_id and parked.agent_id == AGENT
    assert parked.tickets == [ticket]
    assert parked.snapshot_id == ticket.snapshot_id
    assert parked.fingerprint == ticket.fingerprint
    # Messages up to the park are committed: the input and the assistant's call.
    messages = rig.store.messages(THREAD)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert [c.id for c in messages[1].tool_calls or []] == ["g1"]
    assert rig.store.runs[state.run_id].phase is Phase.WAITING
    # The ticket is JSON.
    assert ResumeTicket.model_validate_json(ticket.model_dump_json()) == ticket


@pytest.mark.parametrize("reason", list(AwaitReason))
async def test_tool_suspend_call_parks_the_run(reason: AwaitReason) -> None:
    args = {"question": "colour?", "reason": reason.value}
    rig = build([calls_turn(("q1", "ask", args)), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)

    assert state.phase is Phase.WAITING
    (ticket,) = state.tickets
    assert ticket.run_id == state.run_id and ticket.thread_id == THREAD
    assert ticket.fingerprint == rig.runtime.resolve(AGENT).fingerprint
    assert ticket.await_reason is reason
    # The parked call carries the coerced arguments the gates saw, defaults included.
    assert ticket.call == ToolCall(id="q1", name="ask", arguments={**args, "ttl": None})
    assert ticket.payload == {"question": "colour?"}
    assert rig.asked == ["q1"]
    assert (await parked_of(rig)).tickets == [ticket]  # type: ignore[union-attr]
    assert [m.role for m in rig.store.messages(THREAD)] == ["user", "assistant"]


async def test_new_run_on_a_waiting_thread_raises_thread_busy() -> None:
    rig = build([calls_turn(("q1", "ask", {"question": "?"})), "unused"])
    await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    before = await snapshot(rig)
    with pytest.raises(ThreadBusy):
        await rig.runtime.run(AGENT, "another", thread_id=THREAD)
    assert await snapshot(rig) == before
    # Other threads are unaffected.
    state = await rig.runtime.run(AGENT, "elsewhere", thread_id="t-other")
    assert state.phase is Phase.ENDED


async def test_schedule_parks_until_its_time() -> None:
    at = datetime.now(UTC) + timedelta(seconds=0.4)
    rig = build([calls_turn(("s1", "later", {"at": at.isoformat()})), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)

    assert state.phase is Phase.WAITING
    (ticket,) = state.tickets
    assert ticket.await_reason is AwaitReason.SCHEDULED_ACTION
    assert ticket.not_before == at
    assert ticket.payload == {"at": at.isoformat()}
    assert ticket.call.id == "s1"

    await assert_rejected(rig, lambda: rig.runtime.resume(ticket, Approve()), "scheduled")
    assert rig.executed == []

    await asyncio.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()) + 0.05)
    final = await rig.runtime.resume(ticket, Approve())
    assert final.phase is Phase.ENDED and isinstance(final.end_cause, NaturalEnd)
    assert rig.executed == [("s1", "later", {"at": at.isoformat()})]
    assert tool_results(rig.store.messages(THREAD)) == {"s1": ["later ran"]}
