"""Issue 28: run policies keep their promises (effects, actions, bounds, rankings)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from awaken_runtime import (
    Approve,
    AwaitReason,
    Band,
    Block,
    CapabilityBound,
    CapabilityBoundFailure,
    Command,
    ContextMessage,
    Contributions,
    Effect,
    Error,
    HookReaction,
    MergePolicy,
    PhaseContext,
    PhaseHookPoint,
    ScheduledAction,
    Scope,
    ScriptedTurn,
    ShortCircuit,
    StateConflictFailure,
    Suspend,
    ToolOutput,
    inject,
    tool,
)
from awaken_runtime.plugins._gates import strongest, winner

P = PhaseHookPoint
EXCL = MergePolicy.EXCLUSIVE


@tool
def lookup() -> str:
    """Look something up."""
    return "found"


@tool
def notify() -> ToolOutput:
    """Notify someone (emits an effect)."""
    return ToolOutput(content="sent", effects=[Effect(name="count", payload={"from": "tool"})])


def counter(make_plugin: Any, seen: list[Any], **contrib: Any) -> Any:
    """A plugin handling the ``count`` effect by recording its payload."""

    async def handler(effect: Effect, ctx: PhaseContext) -> None:
        seen.append(effect.payload)

    return make_plugin(
        "counter",
        CapabilityBound(effect_handlers={"count"}),
        Contributions(effect_handlers={"count": handler}, **contrib),
    )


def writer(make_plugin: Any, pid: str, point: P, key: str, *, effect: bool, bound_key: str = ""):
    """A plugin whose hook at ``point`` writes ``key`` EXCLUSIVE (and emits ``count``)."""

    async def hook(ctx: PhaseContext) -> HookReaction:
        return HookReaction(
            commands=[Command.set(key, pid, scope=Scope.RUN, merge=EXCL)],
            effects=[Effect(name="count", payload={"from": pid})] if effect else [],
        )

    return make_plugin(
        pid,
        CapabilityBound(phase_hooks={point}, state_keys=[bound_key or f"run:{key}"]),
        Contributions(phase_hooks={point: hook}),
    )


# -- 1: effects of a failed batch never run -------------------------------------------


@pytest.mark.parametrize("point", [P.RUN_START, P.BEFORE_INFERENCE, P.STEP_END])
async def test_effects_of_a_batch_failing_on_a_state_conflict_never_run(
    make_runtime, make_plugin, point
):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        writer(make_plugin, "a", point, "k", effect=True),
        writer(make_plugin, "b", point, "k", effect=False),
    ]
    state = await make_runtime(["one"], plugins=plugins).run()
    assert isinstance(state.end_cause, Error)
    assert isinstance(state.end_cause.failure, StateConflictFailure)
    assert seen == []


@pytest.mark.parametrize("point", [P.RUN_START, P.BEFORE_INFERENCE, P.STEP_END])
async def test_effects_of_a_batch_failing_on_a_capability_bound_never_run(
    make_runtime, make_plugin, point
):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        writer(make_plugin, "a", point, "k", effect=True),
        writer(make_plugin, "b", point, "secret", effect=False, bound_key="run:other"),
    ]
    state = await make_runtime(["one"], plugins=plugins).run()
    assert isinstance(state.end_cause, Error)
    assert isinstance(state.end_cause.failure, CapabilityBoundFailure)
    assert seen == []


async def test_a_batch_failing_both_a_bound_and_a_conflict_runs_no_effects(
    make_runtime, make_plugin
):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        writer(make_plugin, "a", P.STEP_END, "k", effect=True),
        writer(make_plugin, "b", P.STEP_END, "k", effect=True),
        writer(make_plugin, "c", P.STEP_END, "secret", effect=True, bound_key="run:other"),
    ]
    state = await make_runtime(["one"], plugins=plugins).run()
    # The bound is checked as commands are staged, before the conflict at commit.
    assert isinstance(state.end_cause.failure, CapabilityBoundFailure)
    assert seen == []
    assert state.value("k", Scope.RUN) is None


async def test_actions_scheduled_by_a_failed_batch_never_run(make_runtime, make_plugin):
    ran: list[Any] = []

    async def schedule(ctx: PhaseContext) -> HookReaction:
        return HookReaction(
            commands=[Command.set("k", "s", scope=Scope.RUN, merge=EXCL)],
            schedule=[ScheduledAction(name="tick", point=P.RUN_END)],
        )

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> None:
        ran.append(action)

    async def at_end(ctx: PhaseContext) -> None:
        return None  # a RUN_END hook: its batch would commit leftover schedules

    scheduler = make_plugin(
        "sched",
        CapabilityBound(
            phase_hooks={P.STEP_END, P.RUN_END}, action_handlers={"tick"}, state_keys=["run:k"]
        ),
        Contributions(
            phase_hooks={P.STEP_END: schedule, P.RUN_END: at_end}, action_handlers={"tick": tick}
        ),
    )
    plugins = [scheduler, writer(make_plugin, "b", P.STEP_END, "k", effect=False)]
    state = await make_runtime(["one"], plugins=plugins).run()
    assert isinstance(state.end_cause.failure, StateConflictFailure)
    assert ran == [] and state.pending_actions == []


async def test_tool_effects_of_a_call_whose_batch_fails_never_run(make_runtime, make_plugin):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        writer(make_plugin, "b", P.AFTER_TOOL, "secret", effect=False, bound_key="run:other"),
    ]
    rig = make_runtime([ScriptedTurn.call("notify"), "done"], tools=[notify], plugins=plugins)
    state = await rig.run()
    assert isinstance(state.end_cause.failure, CapabilityBoundFailure)
    assert seen == []


async def test_tool_effects_of_a_call_whose_batch_conflicts_never_run(make_runtime, make_plugin):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        writer(make_plugin, "a", P.AFTER_TOOL, "k", effect=True),
        writer(make_plugin, "b", P.AFTER_TOOL, "k", effect=True),
    ]
    rig = make_runtime([ScriptedTurn.call("notify"), "done"], tools=[notify], plugins=plugins)
    state = await rig.run()
    assert isinstance(state.end_cause.failure, StateConflictFailure)
    assert seen == []


async def test_effects_of_committed_batches_still_run_once(make_runtime, make_plugin):
    seen: list[Any] = []
    plugins = [counter(make_plugin, seen), writer(make_plugin, "a", P.STEP_END, "k", effect=True)]
    rig = make_runtime([ScriptedTurn.call("notify"), "done"], tools=[notify], plugins=plugins)
    state = await rig.run()
    assert state.end_cause.kind == "natural_end"
    assert seen == [{"from": "tool"}, {"from": "a"}, {"from": "a"}]


# -- 2: a losing gate decision contributes no effects ---------------------------------


def gate_plugin(make_plugin: Any, pid: str, decision: Any) -> Any:
    async def gate(ctx: PhaseContext, call: Any) -> Any:
        return decision

    return make_plugin(pid, CapabilityBound(tool_gates=True), Contributions(tool_gates=[gate]))


def _short_circuit(tag: str) -> ShortCircuit:
    output = ToolOutput(content="cached", effects=[Effect(name="count", payload={"out": tag})])
    return ShortCircuit(output=output, effects=[Effect(name="count", payload={"gate": tag})])


def _block(tag: str) -> Block:
    return Block(reason=f"no ({tag})", effects=[Effect(name="count", payload={"gate": tag})])


def _suspend(tag: str) -> Suspend:
    return Suspend(
        await_reason=AwaitReason.TOOL_PERMISSION,
        payload={"who": tag},
        effects=[Effect(name="count", payload={"gate": tag})],
    )


@pytest.mark.parametrize("order", ["block_first", "short_circuit_first"])
async def test_a_short_circuit_losing_to_a_block_contributes_no_effects(
    make_runtime, make_plugin, order
):
    seen: list[Any] = []
    gates = [gate_plugin(make_plugin, "sc", _short_circuit("sc"))]
    gates.insert(0 if order == "block_first" else 1, gate_plugin(make_plugin, "bl", _block("bl")))
    rig = make_runtime(
        [ScriptedTurn.call("lookup"), "done"],
        tools=[lookup],
        plugins=[counter(make_plugin, seen), *gates],
    )
    state = await rig.run()
    assert state.end_cause.kind == "natural_end"
    assert seen == [{"gate": "bl"}]
    tool_msg = next(m for m in state.new_messages if m.role == "tool")
    assert tool_msg.content == "no (bl)"


async def test_a_short_circuit_losing_to_a_suspend_contributes_no_effects(
    make_runtime, make_plugin
):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        gate_plugin(make_plugin, "sc", _short_circuit("sc")),
        gate_plugin(make_plugin, "su", _suspend("su")),
    ]
    rig = make_runtime([ScriptedTurn.call("lookup"), "done"], tools=[lookup], plugins=plugins)
    state = await rig.run()
    assert state.phase == "waiting"
    assert {"gate": "sc"} not in seen and {"out": "sc"} not in seen


async def test_a_winning_suspend_contributes_its_effects_once_when_the_step_parks(
    make_runtime, make_plugin
):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        gate_plugin(make_plugin, "sc", _short_circuit("sc")),
        gate_plugin(make_plugin, "su", _suspend("su")),
    ]
    rig = make_runtime([ScriptedTurn.call("lookup"), "done"], tools=[lookup], plugins=plugins)
    state = await rig.run()
    assert state.phase == "waiting"
    assert seen == [{"gate": "su"}]
    state = await rig.runtime.resume(state.ticket.model_dump(mode="json"), Approve())
    assert state.end_cause.kind == "natural_end"
    assert seen == [{"gate": "su"}]  # not again on the resume


async def test_a_winning_short_circuit_contributes_its_effects_once(make_runtime, make_plugin):
    seen: list[Any] = []
    plugins = [counter(make_plugin, seen), gate_plugin(make_plugin, "sc", _short_circuit("sc"))]
    rig = make_runtime([ScriptedTurn.call("lookup"), "done"], tools=[lookup], plugins=plugins)
    await rig.run()
    assert sorted(map(str, seen)) == sorted(map(str, [{"gate": "sc"}, {"out": "sc"}]))


# -- 3: scheduled actions are due-checked at every point, hooks or not ------------------

_POINTS_IN_A_RUN = [
    P.STEP_START,
    P.BEFORE_INFERENCE,
    P.AFTER_INFERENCE,
    P.AFTER_TOOL,
    P.STEP_END,
    P.RUN_END,
]


@pytest.mark.parametrize("point", _POINTS_IN_A_RUN)
async def test_an_action_for_a_point_without_hooks_runs_there(make_runtime, make_plugin, point):
    ran: list[Any] = []

    async def schedule(ctx: PhaseContext) -> HookReaction:
        return HookReaction(schedule=[ScheduledAction(name="tick", point=point)])

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> None:
        ran.append((ctx.point, ctx.run.step))

    plugin = make_plugin(
        "sched",
        CapabilityBound(phase_hooks={P.RUN_START}, action_handlers={"tick"}),
        Contributions(phase_hooks={P.RUN_START: schedule}, action_handlers={"tick": tick}),
    )
    rig = make_runtime([ScriptedTurn.call("lookup"), "done"], tools=[lookup], plugins=[plugin])
    state = await rig.run()
    assert state.end_cause.kind == "natural_end"
    # RUN_END comes after the second (final) step; every other point in step 1.
    assert ran == [(point, 2 if point is P.RUN_END else 1)]


# -- 4: the cascade limit means what it says -------------------------------------------


def chain_plugin(make_plugin: Any, rounds: int, ran: list[int]) -> Any:
    async def schedule(ctx: PhaseContext) -> HookReaction | None:
        if ctx.run.step != 1:
            return None
        return HookReaction(
            schedule=[ScheduledAction(name="tick", payload={"n": 1}, point=P.STEP_END)]
        )

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> HookReaction:
        n = action.payload["n"]
        ran.append(n)
        more = [ScheduledAction(name="tick", payload={"n": n + 1}, point=P.STEP_END)]
        return HookReaction(schedule=more if n < rounds else [])

    return make_plugin(
        "chain",
        CapabilityBound(phase_hooks={P.STEP_START}, action_handlers={"tick"}),
        Contributions(phase_hooks={P.STEP_START: schedule}, action_handlers={"tick": tick}),
    )


async def test_sixteen_cascading_rounds_pass(make_runtime, make_plugin):
    ran: list[int] = []
    state = await make_runtime(["one"], plugins=[chain_plugin(make_plugin, 16, ran)]).run()
    assert state.end_cause.kind == "natural_end"
    assert ran == list(range(1, 17))


async def test_the_seventeenth_cascading_round_is_refused(make_runtime, make_plugin):
    ran: list[int] = []
    state = await make_runtime(["one"], plugins=[chain_plugin(make_plugin, 17, ran)]).run()
    assert isinstance(state.end_cause, Error)
    assert "16 rounds" in state.end_cause.failure.message
    assert ran == list(range(1, 17))  # the 17th never ran


# -- 10: EXCLUSIVE is one write per batch; gate ties go to the first gate --------------


async def test_two_exclusive_writes_by_one_hook_end_in_a_typed_conflict(make_runtime, make_plugin):
    async def hook(ctx: PhaseContext) -> HookReaction:
        return HookReaction(
            commands=[
                Command.set("k", 1, scope=Scope.RUN, merge=EXCL),
                Command.set("k", 2, scope=Scope.RUN, merge=EXCL),
            ]
        )

    plugin = make_plugin(
        "twice",
        CapabilityBound(phase_hooks={P.BEFORE_INFERENCE}, state_keys=["run:k"]),
        Contributions(phase_hooks={P.BEFORE_INFERENCE: hook}),
    )
    state = await make_runtime(["one"], plugins=[plugin]).run()
    failure = state.end_cause.failure
    assert isinstance(failure, StateConflictFailure)
    assert failure.producers == ("twice", "twice")
    assert state.value("k", Scope.RUN) is None


async def test_tied_suspends_the_first_gate_wins_and_owns_the_ticket(make_runtime, make_plugin):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        gate_plugin(make_plugin, "first", _suspend("first")),
        gate_plugin(make_plugin, "second", _suspend("second")),
    ]
    rig = make_runtime([ScriptedTurn.call("lookup"), "done"], tools=[lookup], plugins=plugins)
    state = await rig.run()
    assert state.phase == "waiting"
    (ticket,) = state.tickets
    assert ticket.payload == {"who": "first"}
    assert {"gate": "second"} not in seen


async def test_tied_blocks_the_first_gate_wins_the_reason_and_the_effects(
    make_runtime, make_plugin
):
    seen: list[Any] = []
    plugins = [
        counter(make_plugin, seen),
        gate_plugin(make_plugin, "first", _block("first")),
        gate_plugin(make_plugin, "second", _block("second")),
    ]
    rig = make_runtime([ScriptedTurn.call("lookup"), "done"], tools=[lookup], plugins=plugins)
    state = await rig.run()
    tool_msg = next(m for m in state.new_messages if m.role == "tool")
    assert tool_msg.content == "no (first)"
    assert seen == [{"gate": "first"}]


async def test_a_block_beats_a_suspend_wherever_it_stands(make_runtime, make_plugin):
    for order in (("su", "bl"), ("bl", "su")):
        seen: list[Any] = []
        decisions = {"su": _suspend("su"), "bl": _block("bl")}
        gates = [gate_plugin(make_plugin, pid, decisions[pid]) for pid in order]
        rig = make_runtime(
            [ScriptedTurn.call("lookup"), "done"],
            tools=[lookup],
            plugins=[counter(make_plugin, seen), *gates],
        )
        state = await rig.run()
        assert state.end_cause.kind == "natural_end" and state.tickets == []
        assert seen == [{"gate": "bl"}]


def test_strongest_and_winner_rank_alike() -> None:
    a, b = _block("a"), _block("b")
    assert winner([("x", None), ("p", a), ("q", b)]) == ("p", a)
    assert strongest([None, a, b]) is a
    assert winner([("p", _short_circuit("s")), ("q", _suspend("t"))])[0] == "q"
    assert winner([("p", None)]) is None


# -- 6: context cooldowns are run state, so they survive suspend/resume ----------------


async def test_a_context_cooldown_survives_suspend_and_resume(make_runtime, make_plugin):
    tip = ContextMessage(key="tip", band=Band.SUFFIX, content="TIP", cooldown_steps=2)

    async def hook(ctx: PhaseContext) -> HookReaction:
        return HookReaction(commands=[inject(tip)])

    async def gate(ctx: PhaseContext, call: Any) -> Any:
        if ctx.decision is None:
            return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
        return None

    plugin = make_plugin(
        "ctx",
        CapabilityBound(
            phase_hooks={P.BEFORE_INFERENCE}, context_bands={Band.SUFFIX}, tool_gates=True
        ),
        Contributions(phase_hooks={P.BEFORE_INFERENCE: hook}, tool_gates=[gate]),
    )
    turns = [
        ScriptedTurn.call("lookup"),
        ScriptedTurn.call("lookup"),
        ScriptedTurn.call("lookup"),
        "done",
    ]
    rig = make_runtime(turns, tools=[lookup], plugins=[plugin])
    state = await rig.run("go", thread_id="t")
    while state.phase == "waiting":
        state = await rig.runtime.resume(state.ticket.model_dump(mode="json"), Approve())
    assert state.end_cause.kind == "natural_end"
    with_tip = [
        r.step
        for r in rig.executor.requests
        if any(m.metadata.get("context_key") == "tip" for m in r.messages)
    ]
    assert with_tip == [1, 4]  # steps 2 and 3 (each a resumed leg) were cooled down


# -- 9: a time-based action pending at run end is reported, not dropped -----------------


async def test_an_action_still_pending_at_run_end_is_reported(make_runtime, make_plugin):
    later = datetime.now(UTC) + timedelta(days=1)
    reminder = ScheduledAction(name="tick", payload={"why": "follow up"}, at=later)
    ran: list[Any] = []

    async def schedule(ctx: PhaseContext) -> HookReaction:
        return HookReaction(schedule=[reminder])

    async def tick(action: ScheduledAction, ctx: PhaseContext) -> None:
        ran.append(action)

    plugin = make_plugin(
        "sched",
        CapabilityBound(phase_hooks={P.RUN_START}, action_handlers={"tick"}),
        Contributions(phase_hooks={P.RUN_START: schedule}, action_handlers={"tick": tick}),
    )
    rig = make_runtime(["done"], plugins=[plugin])
    events = await rig.events()
    finish = events[-1]
    assert finish.type == "run_finish" and finish.pending_actions == [reminder]
    state = await make_runtime(["done"], plugins=[plugin]).run()
    assert state.pending_actions == [reminder] and ran == []


async def test_a_run_without_pending_actions_reports_none(make_runtime):
    state = await make_runtime(["done"]).run()
    assert state.pending_actions == []
