"""Parking alone: parked calls become tickets and a record; unfinished calls are answered."""

from __future__ import annotations

from awaken_runtime import AwaitReason, Message, Scope, ToolCall
from awaken_runtime.run._calls_outcome import Parked
from awaken_runtime.run._parking import close_open_calls, parked_record, ticket_parked_calls
from awaken_runtime.state._engine import Command, StagedCommand


def test_parked_calls_become_tickets_once(make_parts):
    run = make_parts()
    call = ToolCall(id="c1", name="transfer", arguments={"amount": 5})
    parked = [Parked(call, AwaitReason.TOOL_PERMISSION, {"why": "large"})]
    (ticket,) = ticket_parked_calls(run.deps, run.leg, parked, "snap_1")
    assert (ticket.run_id, ticket.thread_id, ticket.snapshot_id) == ("run_1", "t", "snap_1")
    assert ticket.fingerprint == run.deps.agent.snapshot.fingerprint
    assert ticket.call == call and ticket.payload == {"why": "large"}
    assert ticket.signature is None
    assert ticket.trace == run.leg.trace
    (again,) = ticket_parked_calls(run.deps, run.leg, parked, "snap_2")
    assert again.ticket_id != ticket.ticket_id  # each ticketing makes a new ticket


def test_tickets_are_signed_under_the_runtime_secret(make_parts):
    run = make_parts()
    run.deps.ticket_secret = b"s3cret"
    parked = [Parked(ToolCall(id="c1", name="x"), AwaitReason.USER_INPUT, {})]
    (ticket,) = ticket_parked_calls(run.deps, run.leg, parked, "snap_1")
    assert ticket.verify(b"s3cret") and not ticket.verify(b"other")


def test_parked_record_keeps_run_state_and_held_messages_only(make_parts):
    run = make_parts()
    run.leg.step, run.leg.seq = 3, 7
    run.leg.engine.commit(
        "t",
        [
            StagedCommand("p", Command.set("r", 1, scope=Scope.RUN)),
            StagedCommand("p", Command.set("th", 2, scope=Scope.THREAD)),
        ],
    )
    record = parked_record(run.deps, run.leg, "snap_1", [], [Message.user("held")])
    assert record.run_state == [("r", 1)]  # thread scope is committed with the thread
    assert (record.step, record.seq) == (3, 8)
    assert [m.text for m in record.held_messages] == ["held"]


def test_close_open_calls_answers_only_the_unanswered_calls_of_the_last_step(make_parts):
    run = make_parts()
    old = ToolCall(id="old", name="x")
    run.leg.transcript.append(Message(id="m1", role="assistant", tool_calls=[old]))
    calls = [ToolCall(id="a", name="x"), ToolCall(id="b", name="y")]
    run.leg.transcript.append(Message(id="m2", role="assistant", tool_calls=calls))
    run.leg.transcript.append(Message.tool("a", "done", name="x"))
    run.leg.applying = "b"
    close_open_calls(run.leg, "the resume did not complete")
    tool_results = [(m.tool_call_id, m.text) for m in run.leg.transcript.view() if m.role == "tool"]
    assert tool_results == [
        ("a", "done"),
        ("b", "The call was interrupted: the resume did not complete"),
    ]
