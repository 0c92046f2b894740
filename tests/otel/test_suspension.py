"""A parked run resumed in a new runtime (and store connection) continues the same trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from awaken_otel import names as n
from awaken_runtime import (
    AGENT_RUN,
    Approve,
    ObservedRun,
    Phase,
    ResumeRejected,
    RunState,
    ScriptedTurn,
    SuspendCall,
    ToolCall,
    ToolCallContext,
    tool,
)
from awaken_runtime.stores import SQLiteStore
from awaken_runtime.testing import scripted_runtime


@tool
async def transfer(amount: int, ctx: ToolCallContext) -> str:
    """Move money once a human approved it."""
    if ctx.decision is None:
        raise SuspendCall(payload={"question": f"transfer {amount}?"})
    return f"moved {amount}"


def turns() -> list[Any]:
    call = ToolCall(id="c1", name="transfer", arguments={"amount": 5})
    return [ScriptedTurn(tool_calls=[call]), "transferred"]


async def test_a_resume_in_a_new_runtime_continues_the_trace_and_links_the_parked_leg(
    otel: Any, runtime_for: Any, tmp_path: Path
) -> None:
    path = tmp_path / "threads.db"
    first = runtime_for(
        {"bank": turns()}, otel.telemetry(), tools={"bank": [transfer]}, store=SQLiteStore(path)
    )
    parked = await first.run("bank", "pay", thread_id="t-pay")
    assert parked.phase is Phase.WAITING
    (ticket,) = parked.tickets
    assert set(ticket.trace) == {"traceparent"}

    # Another process: a new store connection, runtime and observer (same exporter).
    second = runtime_for(
        {"bank": turns()[1:]}, otel.telemetry(), tools={"bank": [transfer]}, store=SQLiteStore(path)
    )
    done = await second.resume(ticket.model_dump(mode="json"), Approve())
    assert done.final_text == "transferred"

    legs = otel.spans("invoke_agent")
    assert len(legs) == 2
    parked_leg, resumed = legs
    assert parked_leg.attributes[n.AWAKEN_LEG] == "start"
    assert parked_leg.attributes[n.AWAKEN_PHASE] == "waiting"
    assert parked_leg.attributes[n.AWAKEN_END_CAUSE] == "waiting"
    assert parked_leg.status.status_code is StatusCode.UNSET
    suspended, executed = otel.spans("execute_tool")
    assert suspended.attributes[n.AWAKEN_TOOL_OUTCOME] == "suspended"
    assert suspended.parent.span_id == parked_leg.context.span_id
    # Same trace; under the parked leg, and linked to it.
    assert resumed.attributes[n.AWAKEN_LEG] == "resume"
    assert resumed.attributes[n.AWAKEN_RUN_ID] == parked_leg.attributes[n.AWAKEN_RUN_ID]
    assert resumed.context.trace_id == parked_leg.context.trace_id
    assert resumed.parent.span_id == parked_leg.context.span_id
    (link,) = resumed.links
    assert link.context.span_id == parked_leg.context.span_id
    assert link.attributes[n.AWAKEN_LINK] == "parked_leg"
    assert resumed.attributes[n.AWAKEN_END_CAUSE] == "natural_end"
    assert executed.parent.span_id == resumed.context.span_id
    assert executed.attributes[n.TOOL_CALL_ID] == "c1"
    assert executed.attributes[n.AWAKEN_TOOL_OUTCOME] == "success"
    (chat,) = [s for s in otel.spans("chat") if s.parent.span_id == resumed.context.span_id]
    assert chat.context.trace_id == parked_leg.context.trace_id

    causes = {p.attributes[n.AWAKEN_END_CAUSE]: p.value for p in otel.points(n.AWAKEN_RUNS)}
    assert causes == {"waiting": 1, "natural_end": 1}


async def test_a_resume_made_inside_another_trace_stays_in_the_runs_trace(
    otel: Any, runtime_for: Any
) -> None:
    rt = runtime_for({"bank": turns()}, otel.telemetry(), tools={"bank": [transfer]})
    parked = await rt.run("bank", "pay")
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("POST /resume") as request:
        await rt.resume(parked.tickets[0], Approve())
    parked_leg, resumed = otel.spans("invoke_agent")
    assert resumed.context.trace_id == parked_leg.context.trace_id
    assert resumed.parent.span_id == parked_leg.context.span_id
    kinds = {link.attributes[n.AWAKEN_LINK]: link.context for link in resumed.links}
    assert kinds["parked_leg"].span_id == parked_leg.context.span_id
    assert kinds["resumed_by"].span_id == request.get_span_context().span_id


async def test_the_stored_trace_is_signed_with_the_ticket(otel: Any, runtime_for: Any) -> None:
    """A client cannot move a resumed leg into another trace by editing its ticket."""
    rt = runtime_for({"bank": turns()}, otel.telemetry(), tools={"bank": [transfer]})
    rt.ticket_secret = b"k" * 32
    parked = await rt.run("bank", "pay")
    ticket = parked.tickets[0].model_dump(mode="json")
    forged = dict(ticket, trace={"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-01"})
    with pytest.raises(ResumeRejected, match="signature"):
        await rt.resume(forged, Approve())
    unsigned = dict(forged, signature=None)
    with pytest.raises(ResumeRejected):
        await rt.resume(unsigned, Approve())
    await rt.resume(ticket, Approve())
    parked_leg, resumed = otel.spans("invoke_agent")
    assert resumed.context.trace_id == parked_leg.context.trace_id


async def test_a_cancelled_parked_run_ends_in_its_trace(otel: Any, runtime_for: Any) -> None:
    rt = runtime_for({"bank": turns()}, otel.telemetry(), tools={"bank": [transfer]})
    parked = await rt.run("bank", "pay", thread_id="t-c")
    state = await rt.cancel_waiting("t-c")
    assert state.end_cause.kind == "cancelled"
    parked_leg, cancelled = otel.spans("invoke_agent")
    assert cancelled.attributes[n.AWAKEN_LEG] == "cancel"
    assert cancelled.attributes[n.AWAKEN_END_CAUSE] == "cancelled"
    assert cancelled.context.trace_id == parked_leg.context.trace_id
    assert cancelled.status.status_code is StatusCode.UNSET
    assert parked.run_id == cancelled.attributes[n.AWAKEN_RUN_ID]


async def test_a_child_that_parks_resumes_under_its_parents_resumed_call(
    otel: Any, runtime_for: Any
) -> None:
    call = ToolCall(id="d0", name=AGENT_RUN, arguments={"agent_id": "bank", "prompt": "pay"})
    rt = runtime_for(
        {"boss": [ScriptedTurn(tool_calls=[call]), "paid"], "bank": turns()},
        otel.telemetry(),
        tools={"bank": [transfer]},
        delegates=["bank"],
    )
    parked = await rt.run("boss", "go")
    assert parked.phase is Phase.WAITING
    assert parked.tickets[0].trace  # the parent's ticket carries the parent's trace
    done = await rt.resume(parked.tickets[0], Approve())
    assert done.final_text == "paid"

    boss_parked, boss_resumed = otel.spans("invoke_agent boss")
    bank_parked, bank_resumed = otel.spans("invoke_agent bank")
    trace_id = boss_parked.context.trace_id
    for span in otel.spans():
        assert span.context.trace_id == trace_id, span.name
    first_call, resumed_call = [s for s in otel.spans("execute_tool agent_run")]
    assert first_call.attributes[n.AWAKEN_TOOL_OUTCOME] == "suspended"
    assert bank_parked.parent.span_id == first_call.context.span_id
    # The resumed child nests under the parent's resumed delegation call ...
    assert resumed_call.parent.span_id == boss_resumed.context.span_id
    assert bank_resumed.parent.span_id == resumed_call.context.span_id
    # ... and links the child's own parked leg.
    (link,) = bank_resumed.links
    assert link.context.span_id == bank_parked.context.span_id


def test_junk_in_a_stored_trace_starts_a_fresh_trace(otel: Any) -> None:
    telemetry = otel.telemetry()
    model = scripted_runtime().runtime.resolve("agent").model
    waiting = RunState(run_id="r", thread_id="t", agent_id="a", phase=Phase.WAITING)
    junk: list[Any] = [{"traceparent": "00-zz-yy-01"}, {"traceparent": 5}, {}, "00-abc"]
    for carrier in junk:
        run = ObservedRun(
            run_id="r", thread_id="t", agent_id="a", model=model, leg="resume", parked=(carrier,)
        )
        telemetry.start_run(run).end(waiting)
    spans = otel.spans("invoke_agent")
    assert len(spans) == len(junk)
    for span in spans:
        assert span.parent is None and span.links == ()
