"""Resuming beyond the first leg: from a new Runtime after a JSON round trip,
``run_to_completion`` with sync and async callbacks, and the event stream across
suspend and resume.
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
    assert_every_call_answered_once,
    build,
    calls_turn,
    parked_of,
    summary,
    tool_results,
)

from awaken_runtime import (
    Approve,
    AwaitReason,
    Deny,
    InMemoryStore,
    NaturalEnd,
    Phase,
    Respond,
    ResumeTicket,
    RunFinish,
    RunStart,
    ToolCallDone,
)

# -- resume from a new Runtime ---------------------------------------------------------------------


@pytest.mark.parametrize("form", ["json_str", "json_dict"])
async def test_resume_after_json_round_trip_in_a_new_runtime(form: str) -> None:
    store = InMemoryStore()
    first = build([THREE_CALLS], store=store)
    state = await first.runtime.run(AGENT, "go", thread_id=THREAD)
    wire = [t.model_dump_json() for t in state.tickets]
    del first  # nothing but the store and the JSON survives

    second = build([summary], store=store)
    assert second.runtime is not None
    decoded = wire if form == "json_str" else [json.loads(w) for w in wire]
    mid = await second.runtime.resume(decoded[1], Respond(value="blue"))
    assert mid.phase is Phase.WAITING and mid.run_id == state.run_id

    third = build([summary], store=store)
    final = await third.runtime.resume(decoded[0], Approve())
    assert final.phase is Phase.ENDED and isinstance(final.end_cause, NaturalEnd)
    assert final.run_id == state.run_id
    assert third.executed == [("a", "dangerous", {"x": 50})]
    assert second.executed == []
    messages = store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert tool_results(messages) == {"b": ["safe 2"], "c": ["blue"], "a": ["did 50"]}
    assert messages[-1].text == "results: b=safe 2 | c=blue | a=did 50"
    assert store.runs[state.run_id].phase is Phase.ENDED


# -- run_to_completion ---------------------------------------------------------------------------

TWO_PARKS = [
    calls_turn(("a", "dangerous", {"x": 50}), ("c", "ask", {"question": "colour?"})),
    calls_turn(("d", "dangerous", {"x": 77})),
    summary,
]


def _answer(ticket: ResumeTicket) -> Any:
    if ticket.await_reason is AwaitReason.USER_INPUT:
        return Respond(value=f"answer to {ticket.payload['question']}")
    return Approve()


async def test_run_to_completion_with_a_sync_callback() -> None:
    rig = build(TWO_PARKS)
    seen: list[str] = []

    def on_await(ticket: ResumeTicket) -> Any:
        seen.append(ticket.call.id)
        return _answer(ticket)

    state = await rig.runtime.run_to_completion(AGENT, "go", thread_id=THREAD, on_await=on_await)
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    assert seen == ["a", "c", "d"]
    assert [e[0] for e in rig.executed] == ["a", "d"]
    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert tool_results(messages) == {
        "a": ["did 50"],
        "c": ["answer to colour?"],
        "d": ["did 77"],
    }
    assert state.final_text == "results: a=did 50 | c=answer to colour? | d=did 77"
    assert await parked_of(rig) is None


async def test_run_to_completion_with_an_async_callback() -> None:
    rig = build(TWO_PARKS)
    seen: list[tuple[str, AwaitReason]] = []

    async def on_await(ticket: ResumeTicket) -> Any:
        await asyncio.sleep(0)
        seen.append((ticket.call.id, ticket.await_reason))
        if ticket.call.id == "d":
            return Deny(reason="not twice")
        return _answer(ticket)

    state = await rig.runtime.run_to_completion(AGENT, "go", thread_id=THREAD, on_await=on_await)
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    assert seen == [
        ("a", AwaitReason.TOOL_PERMISSION),
        ("c", AwaitReason.USER_INPUT),
        ("d", AwaitReason.TOOL_PERMISSION),
    ]
    assert [e[0] for e in rig.executed] == ["a"]
    results = tool_results(rig.store.messages(THREAD))
    assert "not twice" in results["d"][0]
    assert_every_call_answered_once(rig.store.messages(THREAD))


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
async def test_run_to_completion_callback_returning_none_leaves_the_run_waiting(
    sync: bool,
) -> None:
    rig = build(TWO_PARKS)
    seen: list[str] = []

    def answer(ticket: ResumeTicket) -> Any:
        seen.append(ticket.call.id)
        return Approve() if ticket.call.id == "a" else None

    async def async_answer(ticket: ResumeTicket) -> Any:
        return answer(ticket)

    state = await rig.runtime.run_to_completion(
        AGENT, "go", thread_id=THREAD, on_await=answer if sync else async_answer
    )
    assert state.phase is Phase.WAITING
    assert seen == ["a", "c"]
    assert [t.call.id for t in state.tickets] == ["c"]
    assert (await parked_of(rig)).tickets == state.tickets  # type: ignore[union-attr]
    # It can still be finished by hand.
    final = await rig.runtime.resume(state.tickets[0], Respond(value="later"))
    assert final.phase is Phase.WAITING and [t.call.id for t in final.tickets] == ["d"]


# -- the event stream across suspend/resume ------------------------------------------------------


async def _streamed_legs() -> tuple[list[Any], list[Any], list[Any]]:
    rig = build([THREE_CALLS, summary])
    first = [e async for e in rig.runtime.stream(AGENT, "go", thread_id=THREAD)]
    finish = first[-1]
    _t_a, t_c = finish.tickets
    second = [e async for e in rig.runtime.stream_resume(t_c, Respond(value="blue"))]
    third = [e async for e in rig.runtime.stream_resume(second[-1].ticket, Approve())]
    return first, second, third


async def test_stream_ends_waiting_with_the_ticket_then_resumes_with_run_start() -> None:
    first, second, third = await _streamed_legs()
    run_id = first[0].run_id

    assert isinstance(first[0], RunStart)
    finish = first[-1]
    assert isinstance(finish, RunFinish)
    assert finish.phase is Phase.WAITING and finish.end_cause is None
    assert finish.ticket is not None and finish.ticket == finish.tickets[0]
    assert [t.call.id for t in finish.tickets] == ["a", "c"]
    assert sum(isinstance(e, RunFinish) for e in first) == 1
    suspended = [
        e.call_id for e in first if isinstance(e, ToolCallDone) and e.outcome == "suspended"
    ]
    assert suspended == ["a", "c"]

    for leg in (second, third):
        assert isinstance(leg[0], RunStart)
        assert leg[0].run_id == run_id and leg[0].thread_id == THREAD
        assert isinstance(leg[-1], RunFinish)
        assert sum(isinstance(e, RunFinish) for e in leg) == 1
        assert all(e.run_id == run_id for e in leg)
    assert second[-1].phase is Phase.WAITING
    assert second[-1].ticket.call.id == "a"
    done = {e.call_id: e for e in second if isinstance(e, ToolCallDone)}
    assert done["c"].output == "blue" and done["c"].outcome == "success"
    assert third[-1].phase is Phase.ENDED
    assert isinstance(third[-1].end_cause, NaturalEnd)
    assert third[-1].final_text == "results: b=safe 2 | c=blue | a=did 50"
    assert third[-1].ticket is None and third[-1].tickets == []
    done = {e.call_id: e for e in third if isinstance(e, ToolCallDone)}
    assert done["a"].output == "did 50" and done["a"].outcome == "success"


async def test_stream_seq_strictly_increases_across_legs() -> None:
    """Regression: at commit be543df a resumed leg's RunStart reused the seq of the
    parked leg's RunFinish (``AgentLoop._park_run`` stored ``seq=self._seq + 1``, which
    the parking RunFinish then took, and ``AgentLoop.restore`` set
    ``self._seq = parked.seq - 1``).
    """
    first, second, third = await _streamed_legs()
    for leg in (first, second, third):
        seqs = [e.seq for e in leg]
        assert seqs == sorted(set(seqs)), seqs
    assert second[0].seq > first[-1].seq, (first[-1].seq, second[0].seq)
    assert third[0].seq > second[-1].seq, (second[-1].seq, third[0].seq)
    everything = [e.seq for e in (*first, *second, *third)]
    assert everything == sorted(set(everything))
