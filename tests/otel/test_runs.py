"""A tool-calling run: its spans, their parents and attributes, and the metrics."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from opentelemetry.trace import SpanKind, StatusCode

from awaken_otel import names as n
from awaken_runtime import (
    Phase,
    ScriptedTurn,
    TokenUsage,
    ToolCall,
    ToolCallContext,
    tool,
)


@tool
async def lookup(order: str, ctx: ToolCallContext) -> str:
    """Look up an order."""
    return f"{order}: shipped"


@tool
async def broken(order: str) -> str:
    """A tool that raises."""
    raise ValueError(f"no such order {order!r}")


USAGE = TokenUsage(prompt_tokens=120, completion_tokens=7, cached_tokens=100, reasoning_tokens=3)


def two_steps(name: str = "lookup") -> list[Any]:
    call = ToolCall(id="call_1", name=name, arguments={"order": "A-1"})
    return [ScriptedTurn(tool_calls=[call], usage=USAGE), ScriptedTurn(text="It shipped.")]


async def test_a_tool_calling_run_nests_inference_and_tool_spans_under_the_run(
    otel: Any, runtime_for: Any
) -> None:
    rt = runtime_for({"clerk": two_steps()}, otel.telemetry(), tools={"clerk": [lookup]})
    state = await rt.run("clerk", "Where is A-1?", thread_id="t-1")
    assert state.final_text == "It shipped."

    assert [s.name for s in otel.spans()] == [
        "chat s-clerk",
        "execute_tool lookup",
        "chat s-clerk",
        "invoke_agent clerk",
    ]
    run = otel.one("invoke_agent clerk")
    first, second = otel.spans("chat")
    call = otel.one("execute_tool lookup")
    assert run.kind is SpanKind.INTERNAL and run.parent is None
    assert first.kind is SpanKind.CLIENT and call.kind is SpanKind.INTERNAL
    trace_id = run.context.trace_id
    for child in (first, call, second):
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == trace_id
    # The tool ran between the two model calls.
    assert first.end_time <= call.start_time <= call.end_time <= second.start_time

    assert dict(run.attributes) == {
        n.OPERATION_NAME: "invoke_agent",
        n.AGENT_NAME: "clerk",
        n.CONVERSATION_ID: "t-1",
        n.PROVIDER_NAME: "p-clerk",
        n.REQUEST_MODEL: "s-clerk",
        n.AWAKEN_RUN_ID: state.run_id,
        n.AWAKEN_LEG: "start",
        n.AWAKEN_PHASE: "ended",
        n.AWAKEN_END_CAUSE: "natural_end",
        n.AWAKEN_STEPS: 2,
        n.USAGE_INPUT_TOKENS: state.usage.prompt_tokens,
        n.USAGE_OUTPUT_TOKENS: state.usage.completion_tokens,
    }
    assert run.status.status_code is StatusCode.UNSET
    a = first.attributes
    assert a[n.OPERATION_NAME] == "chat" and a[n.PROVIDER_NAME] == "p-clerk"
    assert a[n.REQUEST_MODEL] == "s-clerk" and a[n.AWAKEN_PROVIDER_ID] == "p-clerk"
    assert a[n.CONVERSATION_ID] == "t-1" and a[n.AWAKEN_STEP] == 1
    assert a[n.RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert (a[n.USAGE_INPUT_TOKENS], a[n.USAGE_OUTPUT_TOKENS]) == (120, 7)
    assert a[n.USAGE_CACHE_READ_INPUT_TOKENS] == 100
    assert a[n.USAGE_REASONING_OUTPUT_TOKENS] == 3
    assert second.attributes[n.RESPONSE_FINISH_REASONS] == ("stop",)
    assert second.attributes[n.AWAKEN_STEP] == 2
    assert dict(call.attributes) == {
        n.OPERATION_NAME: "execute_tool",
        n.TOOL_NAME: "lookup",
        n.TOOL_CALL_ID: "call_1",
        n.TOOL_TYPE: "function",
        n.CONVERSATION_ID: "t-1",
        n.AWAKEN_RUN_ID: state.run_id,
        n.AWAKEN_TOOL_OUTCOME: "success",
    }
    # Content is opt-in: nothing of the prompt, answer or arguments by default.
    for span in otel.spans():
        assert not {n.INPUT_MESSAGES, n.OUTPUT_MESSAGES, n.TOOL_CALL_ARGUMENTS} & set(
            span.attributes
        )

    tokens = otel.points(n.CLIENT_TOKEN_USAGE)
    by_type = {p.attributes[n.TOKEN_TYPE]: p for p in tokens}
    assert set(by_type) == {"input", "output"}
    assert by_type["input"].count == 2 and by_type["input"].sum == state.usage.prompt_tokens
    assert by_type["output"].sum == state.usage.completion_tokens
    assert by_type["input"].attributes[n.REQUEST_MODEL] == "s-clerk"
    assert list(by_type["input"].explicit_bounds)[:3] == [1, 4, 16]
    (duration,) = otel.points(n.CLIENT_OPERATION_DURATION)
    assert duration.count == 2 and n.ERROR_TYPE not in duration.attributes
    assert duration.attributes[n.OPERATION_NAME] == "chat"
    (runs,) = otel.points(n.AWAKEN_RUNS)
    assert runs.value == 1
    assert dict(runs.attributes) == {n.AGENT_NAME: "clerk", n.AWAKEN_END_CAUSE: "natural_end"}


async def test_content_is_recorded_only_when_enabled(otel: Any, runtime_for: Any) -> None:
    rt = runtime_for(
        {"clerk": two_steps()}, otel.telemetry(capture_content=True), tools={"clerk": [lookup]}
    )
    await rt.run("clerk", "Where is A-1?")
    first, second = otel.spans("chat")
    sent = json.loads(first.attributes[n.INPUT_MESSAGES])
    assert sent[0] == {"role": "system", "parts": [{"type": "text", "content": "You are clerk."}]}
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "Where is A-1?"}]}
    answered = json.loads(first.attributes[n.OUTPUT_MESSAGES])
    assert answered == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "lookup",
                    "arguments": {"order": "A-1"},
                }
            ],
            "finish_reason": "tool_calls",
        }
    ]
    replay = json.loads(second.attributes[n.INPUT_MESSAGES])
    assert replay[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": "A-1: shipped"}],
    }
    call = otel.one("execute_tool lookup")
    assert json.loads(call.attributes[n.TOOL_CALL_ARGUMENTS]) == {"order": "A-1"}
    assert call.attributes[n.TOOL_CALL_RESULT] == "A-1: shipped"


async def test_a_tool_that_raises_marks_its_span_and_the_run_goes_on(
    otel: Any, runtime_for: Any
) -> None:
    rt = runtime_for({"clerk": two_steps("broken")}, otel.telemetry(), tools={"clerk": [broken]})
    state = await rt.run("clerk", "go")
    assert state.phase is Phase.ENDED and state.end_cause.kind == "natural_end"
    call = otel.one("execute_tool broken")
    assert call.status.status_code is StatusCode.ERROR
    assert call.attributes[n.ERROR_TYPE] == "ValueError"
    assert call.attributes[n.AWAKEN_TOOL_OUTCOME] == "failed"
    (event,) = call.events
    assert event.name == "exception" and "no such order" in event.attributes["exception.message"]
    assert otel.one("invoke_agent clerk").status.status_code is StatusCode.UNSET


async def test_an_unknown_tool_is_not_executed_so_it_has_no_span(
    otel: Any, runtime_for: Any
) -> None:
    rt = runtime_for({"clerk": two_steps("nope")}, otel.telemetry(), tools={"clerk": [lookup]})
    await rt.run("clerk", "go")
    assert otel.spans("execute_tool") == []
    assert len(otel.spans("chat")) == 2


async def test_the_run_nests_under_the_callers_span(otel: Any, runtime_for: Any) -> None:
    rt = runtime_for({"clerk": ["hi"]}, otel.telemetry())
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("POST /chat") as outer:
        await rt.run("clerk", "hello")
    run = otel.one("invoke_agent clerk")
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id


async def test_without_an_observer_nothing_is_traced_and_tickets_carry_no_trace(
    otel: Any, runtime_for: Any
) -> None:
    from awaken_runtime import SuspendCall

    @tool
    async def ask(question: str) -> str:
        """Ask a human."""
        raise SuspendCall(payload={"question": question})

    turns = [ScriptedTurn.call("ask", {"question": "ok?"}), "done"]
    rt = runtime_for({"clerk": turns}, None, tools={"clerk": [ask]})
    state = await rt.run("clerk", "go")
    assert state.phase is Phase.WAITING and state.tickets[0].trace == {}
    assert otel.spans() == []


def test_the_runtime_never_imports_opentelemetry() -> None:
    code = (
        "import asyncio, sys\n"
        "from awaken_runtime.testing import scripted_runtime\n"
        "rig = scripted_runtime(['hi'])\n"
        "asyncio.run(rig.run('hello'))\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
