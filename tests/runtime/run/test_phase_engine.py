"""PhaseEngine alone: one snapshot per point, bounds at staging, atomic commits, boundaries."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_runtime import (
    CapabilityBound,
    CapabilityBoundError,
    Command,
    Contributions,
    HookReaction,
    MergePolicy,
    Message,
    PhaseContext,
    PhaseHookPoint,
    Scope,
    StagedCommand,
)
from awaken_runtime.run._signals import End

BI = PhaseHookPoint.BEFORE_INFERENCE
AT = PhaseHookPoint.AFTER_TOOL


def writer(make_plugin: Any, pid: str, key: str, seen: list[Any], point: Any = BI) -> Any:
    async def hook(ctx: PhaseContext) -> HookReaction:
        seen.append((pid, ctx.store.get_value("a", Scope.RUN), ctx.store.get_value("b", Scope.RUN)))
        return HookReaction(commands=[Command.set(key, pid, scope=Scope.RUN)])

    return make_plugin(
        pid,
        CapabilityBound(phase_hooks={point}, state_keys=[f"run:{key}"]),
        Contributions(phase_hooks={point: hook}),
    )


async def test_hooks_of_one_point_share_one_snapshot_and_commit_once(make_parts, make_plugin):
    seen: list[Any] = []
    run = make_parts(
        plugins=[writer(make_plugin, "pa", "a", seen), writer(make_plugin, "pb", "b", seen)]
    )
    engine = run.phases
    await engine.phase(BI)
    # Neither hook saw the other's write: both read the pre-phase snapshot.
    assert seen == [("pa", None, None), ("pb", None, None)]
    assert run.leg.engine.store.get_value("a", Scope.RUN) == "pa"
    assert run.leg.engine.store.get_value("b", Scope.RUN) == "pb"
    assert len(run.leg.engine.log) == 1 and len(run.leg.engine.log[0].entries) == 2
    # Run-scope writes alone: committed and logged, but nothing for the thread store.
    assert run.leg.pending == []


async def test_a_batch_with_a_durable_write_goes_to_the_store_whole(make_parts, make_plugin):
    async def hook(ctx: PhaseContext) -> HookReaction:
        return HookReaction(
            commands=[
                Command.set("a", 1, scope=Scope.RUN),
                Command.set("t", 2, scope=Scope.THREAD),
            ]
        )

    plugin = make_plugin(
        "pt",
        CapabilityBound(phase_hooks={BI}, state_keys=["run:a", "thread:t"]),
        Contributions(phase_hooks={BI: hook}),
    )
    run = make_parts(plugins=[plugin])
    await run.phases.phase(BI)
    assert len(run.leg.pending) == 1 and len(run.leg.pending[0].entries) == 2
    assert [c.key for c in run.leg.step_delta] == ["a", "t"]


async def test_hooks_returning_nothing_commit_nothing(make_parts, make_plugin):
    calls: list[str] = []

    def quiet(pid: str) -> Any:
        async def hook(ctx: PhaseContext) -> None:
            calls.append(pid)

        return make_plugin(
            pid, CapabilityBound(phase_hooks={BI}), Contributions(phase_hooks={BI: hook})
        )

    run = make_parts(plugins=[quiet("q1"), quiet("q2")])
    messages = await run.phases.phase(BI)
    assert calls == ["q1", "q2"] and messages == []
    assert run.leg.engine.log == [] and run.leg.pending == [] and run.leg.step_delta == []


async def test_exclusive_conflict_commits_nothing(make_parts):
    run = make_parts()
    engine = run.phases
    batch = [
        StagedCommand("p1", Command.set("k", 1, scope=Scope.RUN, merge=MergePolicy.EXCLUSIVE)),
        StagedCommand("p2", Command.set("k", 2, scope=Scope.RUN, merge=MergePolicy.EXCLUSIVE)),
    ]
    with pytest.raises(End) as ended:
        engine.commit("test", batch)
    failure = ended.value.cause.failure
    assert failure.kind == "state_conflict" and failure.key == "k"
    assert set(failure.producers) == {"p1", "p2"}
    assert run.leg.engine.store.get_value("k", Scope.RUN) is None
    assert run.leg.pending == [] and run.leg.step_delta == []


def test_stage_refuses_an_undeclared_key_and_stages_nothing_of_it(make_parts, make_plugin):
    plugin = make_plugin("narrow", CapabilityBound(state_keys=["run:mine"]))
    run = make_parts(plugins=[plugin])
    engine = run.phases
    batch: list[StagedCommand] = []
    engine.stage(batch, "narrow", "narrow", [Command.set("mine", 1, scope=Scope.RUN)])
    with pytest.raises(CapabilityBoundError, match="narrow") as err:
        engine.stage(batch, "narrow", "narrow", [Command.set("theirs", 1, scope=Scope.THREAD)])
    assert "thread:theirs" in str(err.value)
    assert [c.command.key for c in batch] == ["mine"]
    # The same key in another scope is another key: not declared either.
    with pytest.raises(CapabilityBoundError):
        engine.stage(batch, "narrow", "narrow", [Command.set("mine", 1, scope=Scope.THREAD)])


@pytest.mark.parametrize("point", [BI, AT])
async def test_transcript_messages_only_from_after_tool(make_parts, make_plugin, point):
    async def hook(ctx: PhaseContext) -> HookReaction:
        return HookReaction(messages=[Message.user("note")])

    plugin = make_plugin(
        "talker", CapabilityBound(phase_hooks={point}), Contributions(phase_hooks={point: hook})
    )
    engine = make_parts(plugins=[plugin]).phases
    if point is AT:
        assert [m.text for m in await engine.phase(point)] == ["note"]
    else:
        with pytest.raises(End) as ended:
            await engine.phase(point)
        failure = ended.value.cause.failure
        assert failure.plugin_id == "talker" and "only AFTER_TOOL" in failure.message


@pytest.mark.parametrize("returned", [{"not": "a reaction"}, "text", 3])
async def test_a_hook_returning_the_wrong_type_is_a_plugin_failure(
    make_parts, make_plugin, returned
):
    async def hook(ctx: PhaseContext) -> Any:
        return returned

    plugin = make_plugin(
        "odd", CapabilityBound(phase_hooks={BI}), Contributions(phase_hooks={BI: hook})
    )
    with pytest.raises(End) as ended:
        await make_parts(plugins=[plugin]).phases.phase(BI)
    failure = ended.value.cause.failure
    assert (failure.plugin_id, failure.hook) == ("odd", "BEFORE_INFERENCE")
    assert "return a HookReaction or None" in failure.message


async def test_a_raising_hook_names_its_plugin_and_point(make_parts, make_plugin):
    async def hook(ctx: PhaseContext) -> None:
        raise KeyError("boom")

    plugin = make_plugin(
        "bad", CapabilityBound(phase_hooks={BI}), Contributions(phase_hooks={BI: hook})
    )
    run = make_parts(plugins=[plugin])
    with pytest.raises(End) as ended:
        await run.phases.phase(BI)
    failure = ended.value.cause.failure
    assert (failure.kind, failure.plugin_id, failure.hook) == ("plugin", "bad", "BEFORE_INFERENCE")
    assert "KeyError" in failure.message
    assert run.leg.pending == []


def test_idle_and_boundary(make_parts, make_plugin):
    async def hook(ctx: PhaseContext) -> None:
        return None

    run = make_parts(
        plugins=[
            make_plugin(
                "p", CapabilityBound(phase_hooks={BI}), Contributions(phase_hooks={BI: hook})
            )
        ]
    )
    engine = run.phases
    assert not engine.idle(BI)
    assert engine.idle(PhaseHookPoint.STEP_END)
    engine.boundary()  # nothing to stop for
    run.leg.stop_reason = "p: enough"
    with pytest.raises(End) as ended:
        engine.boundary()
    assert ended.value.cause.kind == "stopped" and ended.value.cause.reason == "p: enough"
    run.leg.stop_reason = None
    run.leg.cancel.cancel()
    with pytest.raises(End) as ended:
        engine.boundary()
    assert ended.value.cause.kind == "cancelled"


async def test_checkpoint_writes_only_what_is_new(make_parts):
    run = make_parts()
    engine = run.phases
    await engine.checkpoint()
    assert run.leg.version == 0  # nothing new: no store write at all
    run.leg.transcript.append(Message.user("hi"))
    await engine.checkpoint()
    assert run.leg.version == 1
    assert [m.text for m in run.leg.persisted] == ["hi"]
    snapshot = await run.deps.store.load(run.deps.binding)
    assert [m.text for m in snapshot.messages] == ["hi"] and snapshot.version == 1
    await engine.checkpoint()
    assert run.leg.version == 1
