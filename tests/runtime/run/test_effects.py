"""Effects run after their batch commits; scheduled actions run later, bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from awaken_runtime import (
    AwaitReason,
    CapabilityBound,
    CapabilityBoundError,
    Command,
    Contributions,
    Effect,
    Error,
    HookReaction,
    PhaseContext,
    PhaseHookPoint,
    PluginFailure,
    Respond,
    ScheduledAction,
    Scope,
    ScriptedTurn,
    SuspendCall,
    ToolFailure,
    ToolOutput,
    tool,
)
from awaken_runtime.plugins._actions import ACTIONS_KEY
from awaken_runtime.state._effects import EFFECT_FAILURES_KEY

BI = PhaseHookPoint.BEFORE_INFERENCE
SE = PhaseHookPoint.STEP_END


@pytest.fixture
def call() -> Any:
    return ScriptedTurn.call


def effect_plugin(make_plugin: Any, seen: list[Any], *, fail: bool = False, name: str = "audit"):
    async def handler(effect: Effect, ctx: PhaseContext) -> None:
        seen.append((effect.payload, ctx.store.get_value("counter", Scope.RUN)))
        if fail:
            raise RuntimeError("sink down")

    async def hook(ctx: PhaseContext) -> HookReaction:
        n = (ctx.store.get_value("counter", Scope.RUN) or 0) + 1
        return HookReaction(
            commands=[Command.set("counter", n, scope=Scope.RUN)],
            effects=[Effect(name=name, payload={"n": n})],
        )

    return make_plugin(
        "auditor",
        CapabilityBound(
            phase_hooks={BI},
            state_keys=["run:counter"],
            effect_handlers={"audit"},
        ),
        Contributions(phase_hooks={BI: hook}, effect_handlers={"audit": handler}),
    )


async def test_effect_runs_after_commit_and_sees_committed_state(make_runtime, make_plugin):
    seen: list[Any] = []
    rig = make_runtime(["one"], plugins=[effect_plugin(make_plugin, seen)])
    state = await rig.run()
    # The handler saw the value its own batch committed, not the pre-phase one.
    assert seen == [({"n": 1}, 1)]
    assert state.end_cause.kind == "natural_end"


async def test_failing_effect_handler_is_recorded_and_does_not_roll_back(make_runtime, make_plugin):
    seen: list[Any] = []
    rig = make_runtime(["one"], plugins=[effect_plugin(make_plugin, seen, fail=True)])
    state = await rig.run()
    assert state.end_cause.kind == "natural_end"
    assert state.value("counter", Scope.RUN) == 1  # the commit stands
    failures = state.value(EFFECT_FAILURES_KEY, Scope.RUN)
    assert [f["error"] for f in failures.values()] == ["RuntimeError: sink down"]
    assert next(iter(failures.values()))["handler"] == "auditor"


async def test_failing_effect_is_visible_in_the_step_end_event(make_runtime, make_plugin):
    rig = make_runtime(["one"], plugins=[effect_plugin(make_plugin, [], fail=True)])
    events = await rig.events()
    step_end = next(e for e in events if e.type == "step_end")
    assert EFFECT_FAILURES_KEY in {c.key for c in step_end.state_delta}


async def test_unhandled_effect_from_a_hook_is_rejected_when_staged(make_runtime, make_plugin):
    seen: list[Any] = []
    rig = make_runtime(["one"], plugins=[effect_plugin(make_plugin, seen, name="nobody")])
    state = await rig.run()
    failure = state.end_cause.failure
    assert isinstance(failure, PluginFailure) and failure.plugin_id == "auditor"
    assert "'nobody'" in failure.message and "no enabled plugin handles" in failure.message
    assert seen == []
    assert state.value("counter", Scope.RUN) is None  # nothing of the batch committed


async def test_unhandled_effect_from_a_tool_fails_naming_the_effect(make_runtime, call):
    @tool
    def notify() -> ToolOutput:
        """Notify."""
        return ToolOutput(content="sent", effects=[Effect(name="webhook")])

    rig = make_runtime([call("notify"), "done"], tools=[notify])
    state = await rig.run()
    failure = state.end_cause.failure
    assert isinstance(failure, ToolFailure) and "'webhook'" in failure.message


async def test_tool_effect_runs_through_a_plugin_handler(make_runtime, make_plugin, call):
    seen: list[str] = []

    async def handler(effect: Effect, ctx: PhaseContext) -> None:
        seen.append(effect.payload["to"])

    plugin = make_plugin(
        "hooks",
        CapabilityBound(effect_handlers={"webhook"}),
        Contributions(effect_handlers={"webhook": handler}),
    )

    @tool
    def notify(to: str) -> ToolOutput:
        """Notify someone."""
        return ToolOutput(content="sent", effects=[Effect(name="webhook", payload={"to": to})])

    rig = make_runtime([call("notify", {"to": "ops"}), "done"], tools=[notify], plugins=[plugin])
    await rig.run()
    assert seen == ["ops"]


def test_effect_handler_outside_the_bound_fails_closed(make_runtime, make_plugin):
    async def handler(effect: Effect, ctx: PhaseContext) -> None:
        return None

    plugin = make_plugin("sneaky", CapabilityBound(), Contributions(effect_handlers={"x": handler}))
    rig = make_runtime(["done"], plugins=[plugin])
    with pytest.raises(CapabilityBoundError, match="sneaky"):
        rig.runtime.resolve("agent")


# --- scheduled actions ----------------------------------------------------------


def action_plugin(make_plugin: Any, log: list[Any], hook_fn: Any, handler_fn: Any):
    return make_plugin(
        "sched",
        CapabilityBound(
            phase_hooks={BI, SE},
            state_keys=["run:ran"],
            action_handlers={"tick"},
        ),
        Contributions(phase_hooks=hook_fn, action_handlers={"tick": handler_fn}),
    )


async def test_actions_cascade_within_a_phase(make_runtime, make_plugin):
    log: list[int] = []

    async def schedule_first(ctx: PhaseContext) -> HookReaction | None:
        if ctx.run.step == 1:
            return HookReaction(schedule=[ScheduledAction(name="tick", payload={"n": 1}, point=SE)])
        return None

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> HookReaction:
        n = action.payload["n"]
        log.append(n)
        more = [ScheduledAction(name="tick", payload={"n": n + 1}, point=SE)] if n < 3 else []
        return HookReaction(commands=[Command.set("ran", n, scope=Scope.RUN)], schedule=more)

    plugin = action_plugin(make_plugin, log, {BI: schedule_first}, tick)
    rig = make_runtime(["one"], plugins=[plugin])
    state = await rig.run()
    assert log == [1, 2, 3]  # all three rounds ran at the same StepEnd
    assert state.value("ran", Scope.RUN) == 3
    assert state.value(ACTIONS_KEY, Scope.RUN) == {}


async def test_actions_that_never_settle_stop_at_the_bound(make_runtime, make_plugin):
    count = 0

    async def schedule_first(ctx: PhaseContext) -> HookReaction:
        return HookReaction(schedule=[ScheduledAction(name="tick", point=SE)])

    async def forever(action: ScheduledAction, ctx: PhaseContext) -> HookReaction:
        nonlocal count
        count += 1
        return HookReaction(schedule=[ScheduledAction(name="tick", point=SE)])

    rig = make_runtime(
        ["one"], plugins=[action_plugin(make_plugin, [], {BI: schedule_first}, forever)]
    )
    state = await rig.run()
    assert isinstance(state.end_cause, Error)
    assert "16 rounds" in state.end_cause.failure.message
    assert count == 16


async def test_unhandled_action_name_is_rejected(make_runtime, make_plugin):
    async def schedule(ctx: PhaseContext) -> HookReaction:
        return HookReaction(schedule=[ScheduledAction(name="unknown")])

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> None:
        return None

    rig = make_runtime(["one"], plugins=[action_plugin(make_plugin, [], {BI: schedule}, tick)])
    state = await rig.run()
    assert "'unknown'" in state.end_cause.failure.message


async def test_time_scheduled_action_waits_until_due(make_runtime, make_plugin, call):
    ran_at_step: list[int] = []

    async def schedule(ctx: PhaseContext) -> HookReaction | None:
        if ctx.run.step == 1:
            later = datetime.now(UTC) + timedelta(days=1)
            soon = datetime.now(UTC) - timedelta(seconds=1)
            return HookReaction(
                schedule=[
                    ScheduledAction(name="tick", payload={"when": "tomorrow"}, at=later),
                    ScheduledAction(name="tick", payload={"when": "now"}, at=soon, after_steps=1),
                ]
            )
        return None

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> None:
        ran_at_step.append((action.payload["when"], ctx.run.step))

    @tool
    def noop() -> str:
        """No-op."""
        return "ok"

    plugin = action_plugin(make_plugin, [], {BI: schedule}, tick)
    rig = make_runtime([call("noop"), "done"], tools=[noop], plugins=[plugin])
    state = await rig.run()
    assert ran_at_step == [("now", 2)]  # after_steps=1: not before step 2; tomorrow never
    pending = state.value(ACTIONS_KEY, Scope.RUN)
    assert [e["action"]["payload"] for e in pending.values()] == [{"when": "tomorrow"}]


async def test_action_scheduled_for_a_later_step_survives_suspend_and_resume(
    make_runtime, make_plugin, call
):
    ran: list[int] = []

    async def schedule(ctx: PhaseContext) -> HookReaction | None:
        if ctx.run.step == 1:
            return HookReaction(schedule=[ScheduledAction(name="tick", point=BI, after_steps=1)])
        return None

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> None:
        ran.append(ctx.run.step)

    @tool
    def ask() -> str:
        """Ask the user."""
        raise SuspendCall(AwaitReason.USER_INPUT, {"q": "?"})

    plugin = action_plugin(make_plugin, [], {BI: schedule}, tick)
    rig = make_runtime([call("ask"), "done"], tools=[ask], plugins=[plugin])
    parked = await rig.run(thread_id="t")
    assert parked.phase.value == "waiting" and ran == []
    # The pending action is committed run state: it comes back from the parked record.
    state = await rig.runtime.resume(parked.ticket.model_dump(mode="json"), Respond(value="42"))
    assert state.end_cause.kind == "natural_end"
    assert ran == [2]
