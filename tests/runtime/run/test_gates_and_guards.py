"""Tool gates and run-end guards: the strongest gate decision wins (any
combination, property-tested), a short circuit is the result, a block's reason
reaches the model; a guard's ``Steer`` takes another step and the first
steering guard wins.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loop_rig import counted_tools, done_events, request_summary

from awaken_runtime import (
    AwaitReason,
    Block,
    Complete,
    Contributions,
    NaturalEnd,
    Phase,
    Schedule,
    ScriptedTurn,
    ShortCircuit,
    Steer,
    Suspend,
    ToolOutput,
)

# -- gates ------------------------------------------------------------------------------

LATER = datetime(2030, 1, 1, tzinfo=UTC)
DECISIONS = {
    "none": None,
    "block": Block(reason="nope"),
    "suspend": Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={"ask": "ok?"}),
    "short": ShortCircuit(output=ToolOutput.ok("cached answer")),
    "schedule": Schedule(at=LATER),
}
OUTCOME = {
    "none": "success",
    "block": "blocked",
    "suspend": "suspended",
    "short": "short_circuit",
    "schedule": "suspended",
}
RANK = {"none": 0, "schedule": 1, "short": 2, "suspend": 3, "block": 4}


def _gate_plugins(make_plugin, names):
    plugins = []
    for i, name in enumerate(names):
        decision = DECISIONS[name]

        def gate(ctx, call, decision=decision):
            return decision

        plugins.append(
            make_plugin(f"gate-{i}", {"tool_gates": True}, Contributions(tool_gates=[gate]))
        )
    return plugins


async def _gated_run(make_plugin, make_runtime, names):
    tools, calls = counted_tools()
    rig = make_runtime(
        [ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=_gate_plugins(make_plugin, names)
    )
    events = await rig.events("go", thread_id="t")
    return rig, events, calls


@pytest.mark.parametrize(
    ("names", "winner"),
    [
        (("short", "block"), "block"),
        (("block", "short"), "block"),
        (("short", "suspend"), "suspend"),
        (("schedule", "short"), "short"),
        (("suspend", "schedule"), "suspend"),
        (("none", "short"), "short"),
        (("none", "none"), "none"),
        (("schedule", "short", "suspend", "block"), "block"),
    ],
)
async def test_gate_priority(make_plugin, make_runtime, names, winner):
    _rig, events, calls = await _gated_run(make_plugin, make_runtime, names)
    (done,) = done_events(events)
    assert done.outcome == OUTCOME[winner]
    assert calls == (["alpha"] if winner == "none" else [])
    finish = events[-1]
    if winner in ("suspend", "schedule"):
        assert finish.phase == Phase.WAITING
        (ticket,) = finish.tickets
        assert ticket.call.name == "alpha"
        expected = {
            "suspend": AwaitReason.TOOL_PERMISSION,
            "schedule": AwaitReason.SCHEDULED_ACTION,
        }
        assert ticket.await_reason == expected[winner]
    else:
        assert finish.end_cause == NaturalEnd()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(sorted(DECISIONS)), min_size=1, max_size=4))
def test_gate_priority_any_combination(make_plugin, make_runtime, names):
    winner = max(names, key=RANK.__getitem__)
    _rig, events, _calls = asyncio.run(_gated_run(make_plugin, make_runtime, names))
    (done,) = done_events(events)
    assert done.outcome == OUTCOME[winner]


async def test_short_circuit_output_is_the_result(make_plugin, make_runtime):
    rig, events, calls = await _gated_run(make_plugin, make_runtime, ("short",))
    assert calls == []
    (done,) = done_events(events)
    assert done.output == "cached answer"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.text == "cached answer"
    assert not tool_msg.metadata.get("is_error")
    assert ("tool", "cached answer") in request_summary(rig.executor.requests[1])


async def test_blocked_call_shows_reason_to_model(make_plugin, make_runtime):
    rig, _events, calls = await _gated_run(make_plugin, make_runtime, ("short", "block"))
    assert calls == []
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.text == "nope" and tool_msg.metadata.get("is_error") is True


# -- run-end guards ---------------------------------------------------------------------


async def test_guard_steer_takes_another_step_then_complete_ends(make_plugin, make_runtime):
    seen = []

    def guard(ctx):
        seen.append(ctx.run.step)
        return Steer(message="Please double-check.") if len(seen) == 1 else Complete()

    plugin = make_plugin("checker", {"run_end_guards": True}, Contributions(run_end_guards=[guard]))
    rig = make_runtime(["first answer", "second answer"], plugins=[plugin])
    state = await rig.run("question", thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert state.final_text == "second answer"
    assert seen == [1, 2]
    assert [(m.role, m.text) for m in rig.messages("t")] == [
        ("user", "question"),
        ("assistant", "first answer"),
        ("user", "Please double-check."),
        ("assistant", "second answer"),
    ]
    assert request_summary(rig.executor.requests[1])[-1] == ("user", "Please double-check.")


async def test_first_steering_guard_wins(make_plugin, make_runtime):
    async def complete(ctx):
        return Complete()

    def steer_a(ctx):
        return Steer(message="A") if ctx.run.step == 1 else None

    def steer_b(ctx):
        return Steer(message="B") if ctx.run.step == 1 else None

    plugins = [
        make_plugin(pid, {"run_end_guards": True}, Contributions(run_end_guards=[g]))
        for pid, g in (("c", complete), ("a", steer_a), ("b", steer_b))
    ]
    rig = make_runtime(["one", "two"], plugins=plugins)
    await rig.run("q", thread_id="t")
    assert [m.text for m in rig.messages("t") if m.role == "user"] == ["q", "A"]
