"""Sub-agents: each child's run nests under the parent's delegating ``execute_tool`` span."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import SpanKind, StatusCode

from awaken_otel import names as n
from awaken_runtime import (
    AGENT_RUN,
    CapabilityBound,
    ChildRunner,
    Contributions,
    HookReaction,
    InferenceRequest,
    InferenceResponse,
    PhaseHookPoint,
    PluginManifest,
    ScriptedTurn,
    TokenUsage,
    ToolCall,
)


def delegate(*agents: str) -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[
            ToolCall(id=f"d{i}", name=AGENT_RUN, arguments={"agent_id": a, "prompt": f"do {a}"})
            for i, a in enumerate(agents)
        ]
    )


class _Meeting:
    """Children's model: answers only once both children are inside their model call,
    so the batch can only finish if they really run at the same time."""

    def __init__(self, text: str, barrier: asyncio.Barrier) -> None:
        self.text, self.barrier = text, barrier

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        await asyncio.wait_for(self.barrier.wait(), 10)  # a guard against a hang, not a timing
        yield InferenceResponse(text=self.text, usage=TokenUsage(prompt_tokens=5))


async def test_a_parallel_batch_nests_each_child_under_its_own_call(
    otel: Any, runtime_for: Any
) -> None:
    barrier = asyncio.Barrier(2)
    rt = runtime_for(
        {"boss": [delegate("left", "right"), "both done"], "left": [], "right": []},
        otel.telemetry(),
        delegates=["left", "right"],
        executors={"left": _Meeting("L", barrier), "right": _Meeting("R", barrier)},
    )
    state = await rt.run("boss", "split it", thread_id="main")
    assert state.final_text == "both done"

    boss = otel.one("invoke_agent boss")
    calls = {s.attributes[n.TOOL_CALL_ID]: s for s in otel.spans("execute_tool")}
    assert set(calls) == {"d0", "d1"}
    for call in calls.values():
        assert call.name == "execute_tool agent_run" and call.kind is SpanKind.INTERNAL
        assert call.parent.span_id == boss.context.span_id
        assert call.attributes[n.AWAKEN_TOOL_OUTCOME] == "success"
    for agent, call_id in (("left", "d0"), ("right", "d1")):
        child = otel.one(f"invoke_agent {agent}")
        call = calls[call_id]
        # run > tool > child run, one trace.
        assert child.parent is not None and child.parent.span_id == call.context.span_id
        assert child.context.trace_id == boss.context.trace_id
        assert child.attributes[n.AWAKEN_PARENT_RUN_ID] == state.run_id
        assert child.attributes[n.CONVERSATION_ID] == f"main/{call_id}"
        assert call.start_time <= child.start_time <= child.end_time <= call.end_time
        chat = otel.one(f"chat s-{agent}")
        assert chat.parent.span_id == child.context.span_id
    # Both calls were in flight together: each started before the other ended.
    a, b = calls.values()
    assert a.start_time < b.end_time and b.start_time < a.end_time

    runs = {p.attributes[n.AGENT_NAME]: p.value for p in otel.points(n.AWAKEN_RUNS)}
    assert runs == {"boss": 1, "left": 1, "right": 1}
    models = {p.attributes[n.REQUEST_MODEL] for p in otel.points(n.CLIENT_OPERATION_DURATION)}
    assert models == {"s-boss", "s-left", "s-right"}


class _Summarizer:
    """A plugin whose RUN_START hook runs a helper agent (no tool span is current there)."""

    manifest = PluginManifest(
        id="summarizer",
        version="1.0.0",
        bound=CapabilityBound(phase_hooks=[PhaseHookPoint.RUN_START]),
    )

    def resolve(self, config: Any) -> Contributions:
        async def summarize(ctx: Any) -> HookReaction:
            assert isinstance(ctx.children, ChildRunner)
            await ctx.children.run("helper", "summarize", key="s1")
            return HookReaction()

        return Contributions(phase_hooks={PhaseHookPoint.RUN_START: summarize})


async def test_a_child_started_by_a_hook_nests_under_its_parents_run(
    otel: Any, runtime_for: Any
) -> None:
    rt = runtime_for(
        {"boss": ["done"], "helper": ["summary"]},
        otel.telemetry(),
        plugins={"boss": [_Summarizer()]},
    )
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("request"):
        await rt.run("boss", "go")
    boss, helper = otel.one("invoke_agent boss"), otel.one("invoke_agent helper")
    assert helper.parent is not None and helper.parent.span_id == boss.context.span_id


async def test_concurrent_runs_of_one_runtime_keep_their_traces_apart(
    otel: Any, runtime_for: Any
) -> None:
    rt = runtime_for(
        {"boss": [delegate("left"), "x", delegate("left"), "y"], "left": ["L1", "L2"]},
        otel.telemetry(),
        delegates=["left"],
    )
    tracer = otel.tracer_provider.get_tracer("app")

    async def one(name: str) -> None:
        with tracer.start_as_current_span(name):
            await rt.run("boss", name)

    await asyncio.gather(one("first"), one("second"))
    for outer in otel.spans("first") + otel.spans("second"):
        mine = [s for s in otel.spans() if s.context.trace_id == outer.context.trace_id]
        names = sorted(s.name for s in mine)
        assert names == sorted(
            [
                outer.name,
                "invoke_agent boss",
                "chat s-boss",
                "chat s-boss",
                "execute_tool agent_run",
                "invoke_agent left",
                "chat s-left",
            ]
        )


async def test_a_remote_agent_call_is_a_client_span_under_the_delegating_call(
    otel: Any,
) -> None:
    """What a remote delegation service (an A2A client) wraps its call in."""
    telemetry = otel.telemetry()
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("execute_tool agent_run") as tool_span:
        with telemetry.remote_agent("peer", conversation_id="ctx-1"):
            pass
        try:
            with telemetry.remote_agent("peer"):
                raise ConnectionError("peer down")
        except ConnectionError:
            pass
    ok, failed = otel.spans("invoke_agent")
    for span in (ok, failed):
        assert span.kind is SpanKind.CLIENT and span.name == "invoke_agent peer"
        assert span.parent.span_id == tool_span.get_span_context().span_id
    assert ok.attributes[n.CONVERSATION_ID] == "ctx-1"
    assert failed.attributes[n.ERROR_TYPE] == "ConnectionError"
    assert failed.status.status_code is StatusCode.ERROR
