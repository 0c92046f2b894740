"""A resume matches its ticket exactly: every field, the deadline, the agent's
fingerprint (a changed agent is rejected) and, with a secret, the HMAC signature;
a rejected resume changes nothing.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from suspension_rig import (
    AGENT,
    SECRET,
    THREAD,
    THREE_CALLS,
    CountingStore,
    Rig,
    assert_rejected,
    build,
    calls_turn,
    parked_of,
    snapshot,
    summary,
    three_parked,
    tool_results,
)

from awaken_runtime import (
    Approve,
    AwaitReason,
    Deny,
    Phase,
    Respond,
    ResumeRejected,
    ResumeTicket,
    ToolCall,
)

# -- exact match of every field --------------------------------------------------------------

FAR = datetime(2099, 1, 1, tzinfo=UTC)

MISMATCHES: dict[str, tuple[dict[str, Any], str]] = {
    "ticket_id": ({"ticket_id": "tkt_forged"}, "not pending"),
    "run_id": ({"run_id": "run_other"}, "'run_id'"),
    "thread_id": ({"thread_id": "t-elsewhere"}, "no waiting run"),
    "snapshot_id": ({"snapshot_id": "snap_other"}, "'snapshot_id'"),
    "fingerprint": ({"fingerprint": "0" * 64}, "'fingerprint'"),
    "await_reason": ({"await_reason": AwaitReason.MANUAL_PAUSE}, "'await_reason'"),
    "call.arguments": (
        {"call": ToolCall(id="a", name="dangerous", arguments={"x": 5})},
        "'call'",
    ),
    "call.name": ({"call": ToolCall(id="a", name="safe", arguments={"x": 50})}, "'call'"),
    "call.id": ({"call": ToolCall(id="c", name="dangerous", arguments={"x": 50})}, "'call'"),
    "payload": ({"payload": {"x": 1}}, "'payload'"),
    "payload_extra_key": ({"payload": {"x": 50, "approved": True}}, "'payload'"),
    "deadline": ({"deadline": FAR}, "'deadline'"),
    "not_before": ({"not_before": datetime(2000, 1, 1, tzinfo=UTC)}, "'not_before'"),
    "signature": ({"signature": "f" * 64}, "'signature'"),
}


@pytest.mark.parametrize("case", list(MISMATCHES))
async def test_every_field_mismatch_rejected(case: str) -> None:
    rig, t_a, t_c = await three_parked()
    update, match = MISMATCHES[case]
    forged = t_a.model_copy(update=update)
    assert forged != t_a
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), match)
    # Also through JSON, and also when bundled with a valid decision.
    await assert_rejected(
        rig, lambda: rig.runtime.resume(forged.model_dump_json(), Approve()), match
    )
    if case != "thread_id":
        await assert_rejected(
            rig,
            lambda: rig.runtime.resume_many([(t_c, Respond(value="x")), (forged, Approve())]),
            match,
        )
    assert rig.executed == [("b", "safe", {"x": 2})]
    # The genuine ticket still works.
    state = await rig.runtime.resume_many([(t_a, Approve()), (t_c, Respond(value="x"))])
    assert state.phase is Phase.ENDED


async def test_deadline_in_the_past_rejected_as_expired() -> None:
    args = {"question": "quick?", "ttl": -1.0}
    rig = build([calls_turn(("q1", "ask", args)), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    (ticket,) = state.tickets
    assert ticket.deadline is not None and ticket.deadline < datetime.now(UTC)
    for decision in (Respond(value="late"), Approve(), Deny(reason="late")):
        await assert_rejected(
            rig, lambda decision=decision: rig.runtime.resume(ticket, decision), "expired"
        )
    # A waiting run whose only ticket expired can still be cancelled.
    assert (await rig.runtime.cancel_waiting(THREAD)).phase is Phase.ENDED


async def test_deadline_honoured_once_it_passes() -> None:
    rig = build([calls_turn(("q1", "ask", {"question": "?", "ttl": 0.3})), summary])
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    assert ticket.deadline is not None
    await asyncio.sleep(max(0.0, (ticket.deadline - datetime.now(UTC)).total_seconds()) + 0.05)
    await assert_rejected(rig, lambda: rig.runtime.resume(ticket, Respond(value="x")), "expired")


async def test_deadline_in_the_future_accepted() -> None:
    rig = build([calls_turn(("q1", "ask", {"question": "?", "ttl": 3600.0})), summary])
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    assert ticket.deadline is not None and ticket.deadline > datetime.now(UTC)
    state = await rig.runtime.resume(ticket, Respond(value="in time"))
    assert state.phase is Phase.ENDED
    assert tool_results(rig.store.messages(THREAD)) == {"q1": ["in time"]}


# -- a changed agent ----------------------------------------------------------------------------

CHANGES: dict[str, dict[str, Any]] = {
    "tool_description": {"description": "A different description."},
    "plugin_config": {"limit": 20},
    "model": {"model": "scripted-2"},
    "instructions": {"instructions": "You are another agent."},
}


@pytest.mark.parametrize("change", list(CHANGES))
async def test_changed_agent_rejected(change: str) -> None:
    rig, t_a, _t_c = await three_parked()
    rebuilt = build(
        [summary],
        store=rig.store,
        executed=rig.executed,
        asked=rig.asked,
        **CHANGES[change],
    )
    assert rebuilt.runtime.resolve(AGENT).fingerprint != t_a.fingerprint
    before = await snapshot(rig)
    with pytest.raises(ResumeRejected, match="changed") as info:
        await rebuilt.runtime.resume(t_a, Approve())
    assert "agent" in str(info.value)
    assert await snapshot(rig) == before
    assert rebuilt.executor.calls == 0


async def test_unchanged_rebuild_has_the_same_fingerprint() -> None:
    one, two = build(), build()
    assert one.runtime.resolve(AGENT).fingerprint == two.runtime.resolve(AGENT).fingerprint


# -- signed tickets ----------------------------------------------------------------------------


async def _signed_parked() -> tuple[Rig, ResumeTicket, ResumeTicket]:
    rig = build([THREE_CALLS, summary], store=CountingStore(), secret=SECRET)
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    t_a, t_c = state.tickets
    return rig, t_a, t_c


async def test_signed_tickets_carry_a_valid_signature() -> None:
    rig, t_a, t_c = await _signed_parked()
    for t in (t_a, t_c):
        assert t.signature is not None
        assert t.verify(SECRET)
        assert not t.verify(b"another secret")
    assert (await parked_of(rig)).tickets == [t_a, t_c]  # type: ignore[union-attr]
    # After a JSON round trip the signature still verifies and the resume is accepted.
    state = await rig.runtime.resume(json.loads(t_c.model_dump_json()), Respond(value="blue"))
    assert state.phase is Phase.WAITING
    (kept,) = state.tickets
    assert kept == t_a and kept.verify(SECRET)
    state = await rig.runtime.resume(t_a.model_dump_json(), Approve())
    assert state.phase is Phase.ENDED


TAMPER: dict[str, dict[str, Any]] = {
    **{name: update for name, (update, _match) in MISMATCHES.items() if name != "signature"},
}


@pytest.mark.parametrize("case", list(TAMPER))
async def test_tampered_signed_ticket_rejected_before_lookup(case: str) -> None:
    rig, t_a, _t_c = await _signed_parked()
    forged = t_a.model_copy(update=TAMPER[case])
    assert forged.signature == t_a.signature
    loads = rig.store.loads
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), "signature")
    # assert_rejected loads the thread twice itself (before/after snapshots).
    assert rig.store.loads == loads + 2


@pytest.mark.parametrize(
    "variant",
    ["unsigned", "other_secret", "garbage", "truncated"],
)
async def test_unsigned_or_wrongly_signed_ticket_rejected(variant: str) -> None:
    rig, t_a, _t_c = await _signed_parked()
    forged = {
        "unsigned": lambda: t_a.model_copy(update={"signature": None}),
        "other_secret": lambda: t_a.model_copy(update={"signature": None}).signed(b"other"),
        "garbage": lambda: t_a.model_copy(update={"signature": "not-a-mac"}),
        "truncated": lambda: t_a.model_copy(update={"signature": (t_a.signature or "")[:-2]}),
    }[variant]()
    loads = rig.store.loads
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), "signature")
    assert rig.store.loads == loads + 2
    # A forged field re-signed under another secret does not help either.
    resigned = t_a.model_copy(update={"payload": {"x": 1}, "signature": None}).signed(b"other")
    await assert_rejected(rig, lambda: rig.runtime.resume(resigned, Approve()), "signature")
