"""Ticket checks alone: a resume is accepted only on an exact, pending, due, unexpired match."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from awaken_runtime import (
    AwaitReason,
    ParkedRun,
    ResumeRejected,
    ResumeTicket,
    ToolCall,
)
from awaken_runtime.runtime._tickets import check_tickets, parse_decision, parse_ticket


def ticket(tid: str = "tkt_1", **fields: object) -> ResumeTicket:
    data: dict[str, object] = {
        "ticket_id": tid,
        "run_id": "run_1",
        "thread_id": "t",
        "snapshot_id": "snap_1",
        "fingerprint": "f" * 64,
        "await_reason": AwaitReason.TOOL_PERMISSION,
        "call": ToolCall(id="c1", name="transfer", arguments={"amount": 5}),
    }
    data.update(fields)
    return ResumeTicket(**data)  # type: ignore[arg-type]


def parked(*tickets: ResumeTicket) -> ParkedRun:
    return ParkedRun(
        run_id="run_1",
        agent_id="agent",
        fingerprint="f" * 64,
        snapshot_id="snap_1",
        thread_id="t",
        profile_id="default",
        namespace="default",
        step=1,
        seq=3,
        tickets=list(tickets),
    )


def test_an_exact_pending_ticket_is_accepted():
    check_tickets(parked(ticket()), "t", [ticket()])


@pytest.mark.parametrize(
    "given, reason",
    [
        (ticket("tkt_2"), "not pending"),
        (ticket(snapshot_id="snap_0"), "field 'snapshot_id'"),
        (
            ticket(call=ToolCall(id="c1", name="transfer", arguments={"amount": 5000})),
            "field 'call'",
        ),
        (
            ticket(call=ToolCall(id="c1", name="transfer", arguments={"amount": "5"})),
            "field 'call'",
        ),
        (ticket(await_reason=AwaitReason.USER_INPUT), "field 'await_reason'"),
        (ticket(fingerprint="0" * 64), "field 'fingerprint'"),
    ],
)
def test_a_ticket_that_differs_anywhere_is_rejected(given, reason):
    with pytest.raises(ResumeRejected, match=reason):
        check_tickets(parked(ticket()), "t", [given])


def test_the_same_ticket_twice_in_one_resume_is_rejected():
    with pytest.raises(ResumeRejected, match="answered twice"):
        check_tickets(parked(ticket()), "t", [ticket(), ticket()])


def test_expired_and_not_yet_due_tickets_are_rejected():
    past = datetime.now(UTC) - timedelta(seconds=1)
    expired = ticket(deadline=past)
    with pytest.raises(ResumeRejected, match="expired"):
        check_tickets(parked(expired), "t", [expired])
    future = datetime.now(UTC) + timedelta(hours=1)
    scheduled = ticket(not_before=future)
    with pytest.raises(ResumeRejected, match="scheduled for"):
        check_tickets(parked(scheduled), "t", [scheduled])


@pytest.mark.parametrize("raw", ["{not json", '{"ticket_id": 3}', {"ticket_id": "x"}])
def test_malformed_tickets_are_rejected_not_raised(raw):
    with pytest.raises(ResumeRejected, match="malformed ticket"):
        parse_ticket(raw)


@pytest.mark.parametrize("raw", ["yes", {"kind": "approve!"}, 1, None])
def test_malformed_decisions_name_the_accepted_forms(raw):
    with pytest.raises(ResumeRejected, match="Approve"):
        parse_decision(raw)
