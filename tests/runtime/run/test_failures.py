"""How a run stops or fails: max steps, invalid tool arguments and raising tools,
``ToolError``, raising hooks, gates, guards and observers (``PluginFailure``
naming the hook point), a hook's stop, and messages from AFTER_TOOL hooks only.
"""

from __future__ import annotations

import pytest
from loop_rig import BI, counted_tools, done_events, failure_of, request_summary

from awaken_runtime import (
    Contributions,
    HookReaction,
    MaxSteps,
    Message,
    NaturalEnd,
    PhaseHookPoint,
    PluginFailure,
    ScriptedTurn,
    Stopped,
    ToolCall,
    ToolError,
    ToolFailure,
    tool,
)

# -- stop conditions and failures --------------------------------------------------------


async def test_max_steps(make_runtime):
    tools, calls = counted_tools()
    rig = make_runtime([ScriptedTurn.call("alpha")], repeat=True, tools=tools, max_steps=3)
    state = await rig.run("loop forever")
    assert state.end_cause == MaxSteps(max_steps=3)
    assert state.steps == 3 and rig.executor.calls == 3 and len(calls) == 3


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: first
        b: second
    """
    return a + b


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (ToolCall(id="c1", name="add", arguments={"a": "x", "b": 2}), "field 'a'"),
        (ToolCall(id="c1", name="add", arguments={"a": 1}), "field 'b'"),
        (ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2, "c": 3}), "field 'c'"),
        (ToolCall(id="c1", name="add", parse_error="arguments are not valid JSON"), "not valid"),
    ],
)
async def test_invalid_tool_args_are_a_model_visible_error(make_runtime, call, needle):
    rig = make_runtime([ScriptedTurn(tool_calls=[call]), "sorry"], tools=[add])
    events = await rig.events("add", thread_id="t")
    (done,) = done_events(events)
    assert done.outcome == "error"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.metadata.get("is_error") is True
    assert needle in tool_msg.text and "add" in tool_msg.text
    assert events[-1].end_cause == NaturalEnd()
    assert rig.executor.calls == 2


async def test_tool_raising_generic_exception_is_an_error_result(make_runtime):
    @tool
    def explode() -> str:
        """Always fails."""
        raise ValueError("kaput")

    rig = make_runtime([ScriptedTurn.call("explode"), "recovered"], tools=[explode])
    state = await rig.run("go", thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert state.final_text == "recovered"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.metadata.get("is_error") is True
    assert "kaput" in tool_msg.text and "Traceback" not in tool_msg.text


async def test_tool_error_ends_the_run(make_runtime):
    @tool
    def hard_fail() -> str:
        """Fails hard."""
        raise ToolError("disk on fire")

    turn = ScriptedTurn.call("hard_fail")
    rig = make_runtime([turn, "never"], tools=[hard_fail])
    state = await rig.run("go")
    failure = failure_of(state)
    assert isinstance(failure, ToolFailure)
    assert failure.tool_id == "hard_fail"
    assert failure.call_id == turn.tool_calls[0].id
    assert "disk on fire" in failure.message
    assert rig.executor.calls == 1


HOOK_POINTS = list(PhaseHookPoint)


@pytest.mark.parametrize("point", HOOK_POINTS, ids=[p.name for p in HOOK_POINTS])
async def test_raising_hook_is_a_plugin_failure(make_plugin, make_runtime, point):
    async def boom(ctx):
        raise RuntimeError(f"hook broke at {ctx.point}")

    plugin = make_plugin(
        "fragile", {"phase_hooks": {point}}, Contributions(phase_hooks={point: boom})
    )
    tools, _ = counted_tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go")
    failure = failure_of(state)
    assert isinstance(failure, PluginFailure)
    assert failure.plugin_id == "fragile"
    assert failure.hook == point.name
    assert "RuntimeError" in failure.message and "hook broke" in failure.message


@pytest.mark.parametrize("kind", ["tool_gates", "run_end_guards", "tool_observers"])
async def test_raising_gate_guard_observer_is_a_plugin_failure(make_plugin, make_runtime, kind):
    def boom(*args):
        raise RuntimeError("nope")

    plugin = make_plugin("fragile", {kind: True}, Contributions(**{kind: [boom]}))
    tools, _ = counted_tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go")
    failure = failure_of(state)
    assert isinstance(failure, PluginFailure) and failure.plugin_id == "fragile"
    assert "RuntimeError: nope" in failure.message


@pytest.mark.parametrize(
    ("point", "inferences"),
    [
        (PhaseHookPoint.RUN_START, 0),
        (PhaseHookPoint.STEP_START, 0),
        (PhaseHookPoint.BEFORE_INFERENCE, 0),
        (PhaseHookPoint.AFTER_TOOL, 1),
        (PhaseHookPoint.STEP_END, 1),
    ],
)
async def test_hook_stop_ends_with_stopped(make_plugin, make_runtime, point, inferences):
    async def stop(ctx):
        return HookReaction(stop="budget exhausted")

    plugin = make_plugin(
        "budget", {"phase_hooks": {point}}, Contributions(phase_hooks={point: stop})
    )
    tools, _ = counted_tools()
    rig = make_runtime(
        [ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin], max_steps=5
    )
    state = await rig.run("go")
    assert isinstance(state.end_cause, Stopped)
    assert "budget exhausted" in state.end_cause.reason and "budget" in state.end_cause.reason
    assert rig.executor.calls == inferences


async def test_after_tool_messages_reach_the_transcript(make_plugin, make_runtime):
    at = PhaseHookPoint.AFTER_TOOL

    async def note(ctx):
        return HookReaction(messages=[Message.system(f"note about {ctx.tool_call.name}")])

    plugin = make_plugin("noter", {"phase_hooks": {at}}, Contributions(phase_hooks={at: note}))
    tools, _ = counted_tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go", thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert [(m.role, m.text) for m in rig.messages("t")] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "alpha ran"),
        ("system", "note about alpha"),
        ("assistant", "done"),
    ]
    assert ("system", "note about alpha") in request_summary(rig.executor.requests[1])


async def test_after_tool_messages_keep_tool_results_contiguous(make_plugin, make_runtime):
    """Chat APIs require every tool result to follow its assistant message directly;
    a hook's message must not land between two results of one response."""
    at = PhaseHookPoint.AFTER_TOOL

    async def note(ctx):
        return HookReaction(messages=[Message.system(f"note about {ctx.tool_call.name}")])

    plugin = make_plugin("noter", {"phase_hooks": {at}}, Contributions(phase_hooks={at: note}))
    tools, _ = counted_tools()
    both = ScriptedTurn(
        tool_calls=[ToolCall(id="c1", name="alpha"), ToolCall(id="c2", name="beta")]
    )
    rig = make_runtime([both, "done"], tools=tools, plugins=[plugin])
    await rig.run("go", thread_id="t")
    roles = [m.role for m in rig.messages("t")]
    assert roles[:4] == ["user", "assistant", "tool", "tool"], roles


@pytest.mark.parametrize(
    "point",
    [
        PhaseHookPoint.BEFORE_INFERENCE,
        PhaseHookPoint.STEP_START,
        PhaseHookPoint.AFTER_INFERENCE,
        PhaseHookPoint.STEP_END,
    ],
    ids=lambda p: p.name,
)
async def test_messages_from_other_hooks_are_a_plugin_failure(make_plugin, make_runtime, point):
    async def chatty(ctx):
        return HookReaction(messages=[Message.system("sneaky")])

    plugin = make_plugin(
        "chatty", {"phase_hooks": {point}}, Contributions(phase_hooks={point: chatty})
    )
    rig = make_runtime(["answer", "answer"], plugins=[plugin])
    state = await rig.run("go", thread_id="t")
    failure = failure_of(state)
    assert isinstance(failure, PluginFailure) and failure.plugin_id == "chatty"
    assert "AFTER_TOOL" in failure.message
    assert all(m.text != "sneaky" for m in rig.messages("t"))


async def test_plugin_failure_names_hook_point_the_same_way(make_plugin, make_runtime):
    """A raising hook and a hook returning forbidden messages at the same point
    should report the same ``PluginFailure.hook`` name."""

    async def boom(ctx):
        raise RuntimeError("x")

    async def chatty(ctx):
        return HookReaction(messages=[Message.system("sneaky")])

    hooks = []
    for fn in (boom, chatty):
        plugin = make_plugin("p", {"phase_hooks": {BI}}, Contributions(phase_hooks={BI: fn}))
        rig = make_runtime(["answer"], plugins=[plugin])
        hooks.append(failure_of(await rig.run("go")).hook)
    assert hooks[0] == hooks[1], hooks
