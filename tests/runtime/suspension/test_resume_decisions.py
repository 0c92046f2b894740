"""Resuming with typed decisions: several suspended calls in one step, each decision
applied to its own call exactly once, and duplicate, stale, malformed or racing
decisions rejected without changing anything (the thread's messages, version,
parked record, batches, run records, executed tools and inference count are
compared before and after).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from suspension_rig import (
    AGENT,
    THREAD,
    THREE_CALLS,
    CountingStore,
    Executed,
    assert_every_call_answered_once,
    assert_one_winner,
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
    InMemoryStore,
    NaturalEnd,
    Phase,
    Replay,
    Respond,
    ResumeRejected,
    ResumeTicket,
    Suspend,
)

# -- several suspended calls in one step --------------------------------------------------


async def test_two_of_three_calls_suspend_and_the_third_runs_immediately() -> None:
    rig, t_a, t_c = await three_parked()
    # Only b ran, while a and c wait; c's tool body was entered once (it suspended).
    assert rig.executed == [("b", "safe", {"x": 2})]
    assert rig.asked == ["c"]
    assert [t_a.call.id, t_c.call.id] == ["a", "c"]
    assert t_a.ticket_id != t_c.ticket_id
    assert t_a.await_reason is AwaitReason.TOOL_PERMISSION and t_a.payload == {"x": 50}
    assert t_c.await_reason is AwaitReason.USER_INPUT and t_c.payload == {"question": "colour?"}
    messages = rig.store.messages(THREAD)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert [c.id for c in messages[1].tool_calls or []] == ["a", "b", "c"]
    assert tool_results(messages) == {"b": ["safe 2"]}


async def test_calls_that_do_not_suspend_run_in_model_order() -> None:
    turn = calls_turn(
        ("s1", "safe", {"x": 1}),
        ("p1", "dangerous", {"x": 99}),
        ("s2", "safe", {"x": 2}),
        ("p2", "ask", {"question": "?"}),
        ("s3", "safe", {"x": 3}),
    )
    rig = build([turn, summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    assert state.phase is Phase.WAITING
    assert [t.call.id for t in state.tickets] == ["p1", "p2"]
    assert [e[0] for e in rig.executed] == ["s1", "s2", "s3"]
    results = [m.tool_call_id for m in rig.store.messages(THREAD) if m.role == "tool"]
    assert results == ["s1", "s2", "s3"]


@pytest.mark.parametrize(
    ("decision", "a_content", "a_executed", "a_error"),
    [
        (Approve(), "did 50", [("a", "dangerous", {"x": 50})], False),
        (Deny(reason="too risky"), "too risky", [], True),
        (Respond(value={"answer": 42}), '{"answer":42}', [], False),
        (Replay(arguments={"x": 3}), "did 3", [("a", "dangerous", {"x": 3})], False),
    ],
    ids=["approve", "deny", "respond", "replay"],
)
async def test_resume_in_reverse_order_one_decision_at_a_time(
    decision: Any, a_content: str, a_executed: Executed, a_error: bool
) -> None:
    rig, t_a, t_c = await three_parked()

    # The later call first: c gets the user's answer without running the tool again.
    state = await rig.runtime.resume(t_c, Respond(value="blue"))
    assert state.phase is Phase.WAITING
    assert [t.ticket_id for t in state.tickets] == [t_a.ticket_id]
    assert state.tickets[0] == t_a
    assert rig.asked == ["c"]
    assert tool_results(rig.store.messages(THREAD)) == {"b": ["safe 2"], "c": ["blue"]}
    assert (await parked_of(rig)).tickets == [t_a]  # type: ignore[union-attr]
    assert rig.executor.calls == 1

    # Then the first call.
    state = await rig.runtime.resume(t_a, decision)
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    assert await parked_of(rig) is None
    assert rig.executed == [("b", "safe", {"x": 2}), *a_executed]
    assert rig.asked == ["c"]

    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    by_id = {m.tool_call_id: m for m in messages if m.role == "tool"}
    assert by_id["b"].text == "safe 2"
    assert by_id["c"].text == "blue"
    assert a_content in by_id["a"].text
    assert bool(by_id["a"].metadata.get("is_error")) is a_error
    assert by_id["a"].name == "dangerous"
    # The model saw every result on its own call in the next request.
    last_request = rig.executor.requests[-1]
    seen = {m.tool_call_id: m.text for m in last_request.messages if m.role == "tool"}
    assert seen == {"a": by_id["a"].text, "b": "safe 2", "c": "blue"}
    assert state.final_text.startswith("results: ")
    assert messages[-1].role == "assistant" and messages[-1].text == state.final_text


async def test_approve_runs_the_tool_exactly_once() -> None:
    rig, t_a, t_c = await three_parked()
    await rig.runtime.resume(t_a, Approve())
    await rig.runtime.resume(t_c, Respond(value="blue"))
    assert [e for e in rig.executed if e[0] == "a"] == [("a", "dangerous", {"x": 50})]
    assert tool_results(rig.store.messages(THREAD))["a"] == ["did 50"]


async def test_replay_into_a_suspending_call_parks_it_again() -> None:
    """Replay goes through every gate again: new arguments over the limit park again."""
    rig, t_a, t_c = await three_parked()
    state = await rig.runtime.resume(t_a, Replay(arguments={"x": 70}))
    assert state.phase is Phase.WAITING
    assert sorted(t.call.id for t in state.tickets) == ["a", "c"]
    (t_a2,) = [t for t in state.tickets if t.call.id == "a"]
    assert t_a2.ticket_id != t_a.ticket_id
    assert t_a2.call.arguments == {"x": 70} and t_a2.payload == {"x": 70}
    assert rig.executed == [("b", "safe", {"x": 2})]
    await assert_rejected(rig, lambda: rig.runtime.resume(t_a, Approve()), "not pending")
    state = await rig.runtime.resume_many([(t_a2, Approve()), (t_c, Respond(value="x"))])
    assert state.phase is Phase.ENDED
    assert rig.executed[-1] == ("a", "dangerous", {"x": 70})
    assert_every_call_answered_once(rig.store.messages(THREAD))


async def test_resume_many_applies_each_decision_to_its_own_call() -> None:
    rig, t_a, t_c = await three_parked()
    state = await rig.runtime.resume_many([(t_c, Respond(value="green")), (t_a, Deny(reason="no"))])
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    results = tool_results(rig.store.messages(THREAD))
    assert results["c"] == ["green"]
    assert len(results["a"]) == 1 and "no" in results["a"][0]
    assert rig.executed == [("b", "safe", {"x": 2})]
    assert_every_call_answered_once(rig.store.messages(THREAD))


# -- duplicate and stale decisions ----------------------------------------------------------


async def test_duplicate_decision_rejected_and_nothing_changes() -> None:
    rig, t_a, t_c = await three_parked()
    await rig.runtime.resume(t_c, Respond(value="blue"))
    for again in (t_c, json.loads(t_c.model_dump_json()), t_c.model_dump_json()):
        await assert_rejected(
            rig, lambda again=again: rig.runtime.resume(again, Approve()), "not pending"
        )
    # Also when mixed with a valid decision: the valid one is not applied either.
    await assert_rejected(
        rig, lambda: rig.runtime.resume_many([(t_a, Approve()), (t_c, Approve())]), "not pending"
    )
    assert all(e[0] != "a" for e in rig.executed)


async def test_duplicate_within_one_resume_many_rejected() -> None:
    rig, t_a, t_c = await three_parked()
    await assert_rejected(
        rig,
        lambda: rig.runtime.resume_many([(t_a, Approve()), (t_a, Deny(reason="again"))]),
        "twice",
    )
    copy = ResumeTicket.model_validate_json(t_a.model_dump_json())
    await assert_rejected(
        rig,
        lambda: rig.runtime.resume_many(
            [(t_c, Respond(value="x")), (t_a, Approve()), (copy, Approve())]
        ),
        "twice",
    )
    assert rig.executed == [("b", "safe", {"x": 2})]
    # The run is still fully resumable afterwards.
    state = await rig.runtime.resume_many([(t_a, Approve()), (t_c, Respond(value="x"))])
    assert state.phase is Phase.ENDED


async def test_decision_for_a_finished_run_rejected() -> None:
    rig = build([THREE_CALLS, summary, calls_turn(("d", "dangerous", {"x": 60})), summary])
    first = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    old_a, old_c = first.tickets
    await rig.runtime.resume_many([(old_a, Approve()), (old_c, Respond(value="x"))])

    # No waiting run on the thread at all.
    for stale in (old_a, old_c):
        await assert_rejected(
            rig, lambda stale=stale: rig.runtime.resume(stale, Approve()), "no waiting run"
        )
    # A new run waits on the thread: the old tickets still do not apply.
    second = await rig.runtime.run(AGENT, "again", thread_id=THREAD)
    assert second.phase is Phase.WAITING
    await assert_rejected(rig, lambda: rig.runtime.resume(old_a, Approve()), "not pending")
    # An old ticket rewritten to the new run's id is still not pending.
    forged = old_a.model_copy(update={"run_id": second.run_id})
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), "not pending")
    assert sum(1 for e in rig.executed if e[0] == "a") == 1


async def test_cancelled_run_tickets_are_stale() -> None:
    rig, t_a, t_c = await three_parked()
    await rig.runtime.cancel_waiting(THREAD)
    await assert_rejected(rig, lambda: rig.runtime.resume(t_a, Approve()), "no waiting run")
    await assert_rejected(
        rig, lambda: rig.runtime.resume(t_c, Respond(value="x")), "no waiting run"
    )


async def test_tickets_of_two_threads_in_one_resume_rejected() -> None:
    rig = build([THREE_CALLS, THREE_CALLS], executor=None)
    one = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    two = await rig.runtime.run(AGENT, "go", thread_id="t-two")
    await assert_rejected(
        rig,
        lambda: rig.runtime.resume_many([(one.tickets[0], Approve()), (two.tickets[0], Approve())]),
        "same thread",
        THREAD,
        "t-two",
    )


async def test_empty_and_malformed_resumes_rejected() -> None:
    rig, t_a, _t_c = await three_parked()
    await assert_rejected(rig, lambda: rig.runtime.resume_many([]), "no decisions")
    await assert_rejected(rig, lambda: rig.runtime.resume("{not json", Approve()), "malformed")
    data = t_a.model_dump(mode="json")
    del data["fingerprint"]
    await assert_rejected(rig, lambda: rig.runtime.resume(data, Approve()), "malformed")


async def test_concurrent_resumes_of_one_ticket_run_the_tool_once() -> None:
    rig = build([calls_turn(("m1", "transfer", {"amount": 5})), summary])
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    results = await asyncio.gather(
        rig.runtime.resume(ticket, Approve()),
        rig.runtime.resume(ticket.model_dump_json(), Approve()),
        return_exceptions=True,
    )
    assert_one_winner(results)
    assert rig.executed == [("m1", "transfer", {"amount": 5})]
    assert tool_results(rig.store.messages(THREAD)) == {"m1": ["moved 5"]}


@pytest.mark.parametrize("leases", [True, False], ids=["store_with_leases", "store_without_leases"])
async def test_concurrent_resumes_from_two_runtimes_on_one_store_run_the_tool_once(
    leases: bool,
) -> None:
    """Two Runtime instances sharing a store (two workers) get the same decision: the
    tool runs once.

    At commit be543df both ran the tool: ``Runtime.resume_many`` (``_runtime.py``)
    validates with ``_check``, then ``AgentLoop.resume`` runs the tool before anything
    is committed, and the per-runtime ``asyncio.Lock`` does not span runtimes, so the
    loser was only rejected at its first checkpoint, after its side effect. The working
    tree now holds a store lease around resume (``hold_lease``), but that is a no-op
    for a ThreadStore without lease methods, so the ``store_without_leases`` case
    still runs the tool twice. Port-independent fix: claim the decided tickets first
    (a commit at the loaded version removing them from the parked record; the loser
    gets ``VersionConflict`` before any side effect).
    """
    store = InMemoryStore() if leases else CountingStore()
    rig = build([calls_turn(("m1", "transfer", {"amount": 5}))], store=store)
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    workers = [build([summary], store=rig.store, executed=rig.executed) for _ in range(2)]
    results = await asyncio.gather(
        *(w.runtime.resume(ticket.model_dump_json(), Approve()) for w in workers),
        return_exceptions=True,
    )
    assert_one_winner(results)
    assert tool_results(rig.store.messages(THREAD)) == {"m1": ["moved 5"]}
    assert rig.executed == [("m1", "transfer", {"amount": 5})], "the tool ran twice"


async def test_approving_a_call_the_tool_suspended_does_not_suspend_it_again() -> None:
    """BUG (design gap): an approved interrupt fires again.

    A tool that raises ``SuspendCall(TOOL_PERMISSION)`` is re-run on ``Approve``
    (``AgentLoop._apply`` -> ``_tool_call(call, approved=True)``; ``approved`` only
    drops gate decisions, ``ToolCallRunner._tool_call`` in ``_tool_calls.py``) and,
    having no way to learn it was approved (``ToolCallContext`` carries no decision),
    suspends again: the run parks the same call under a new ticket, forever. Fix: give
    the tool the decision (e.g. ``ToolCallContext.approved``/``decision``) or turn a
    ``SuspendCall`` raised during an approved re-run into an error result.
    """
    rig = build(
        [calls_turn(("q1", "ask", {"question": "may I?", "reason": "tool_permission"})), summary]
    )
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    state = await rig.runtime.resume(ticket, Approve())
    assert [t.call.id for t in state.tickets if t.call.id == "q1"] == [], (
        "the approved call was parked again"
    )
    assert state.phase is Phase.ENDED
    assert_every_call_answered_once(rig.store.messages(THREAD))


@pytest.mark.parametrize(
    "bad",
    [{"kind": "bogus"}, "approve", None, 42, Suspend(await_reason=AwaitReason.USER_INPUT)],
    ids=["unknown_kind", "string", "none", "int", "gate_decision"],
)
async def test_malformed_decision_rejected(bad: Any) -> None:
    """BUG: ``resume_many`` accepts any object as a decision.

    ``AgentLoop._apply`` (``_loop.py``) matches Approve/Replay/Deny/Respond with an
    ``if/elif`` chain that has no ``else``: anything else consumes the ticket, records
    no tool result and the run continues with an unanswered tool call. Fix: validate
    decisions in ``Runtime.resume_many`` (``TypeAdapter(Decision)`` with the ``kind``
    discriminator, so JSON decisions work too) and raise ``ResumeRejected`` before
    any change; add ``else: raise TypeError`` in ``_apply``.
    """
    rig, t_a, _t_c = await three_parked()
    await assert_rejected(rig, lambda: rig.runtime.resume(t_a, bad), "decision")


async def test_decision_sent_as_json_never_leaves_a_call_unanswered() -> None:
    """A JSON decision (``{"kind": "approve"}``) is applied as Approve or rejected."""
    rig, t_a, t_c = await three_parked()
    before = await snapshot(rig)
    try:
        state = await rig.runtime.resume_many(
            [(t_a, {"kind": "approve"}), (t_c, {"kind": "respond", "value": "blue"})]  # type: ignore[list-item]
        )
    except ResumeRejected:
        assert await snapshot(rig) == before
        return
    assert state.phase is Phase.ENDED
    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert tool_results(messages) == {"b": ["safe 2"], "a": ["did 50"], "c": ["blue"]}
