"""Hooks of one point run concurrently on one snapshot and commit once:
commutative writes are order-independent, an exclusive conflict names both
plugins.
"""

from __future__ import annotations

import asyncio
import itertools

from loop_rig import counted_tools, failure_of

from awaken_runtime import (
    Command,
    Contributions,
    HookReaction,
    MergePolicy,
    NaturalEnd,
    PhaseHookPoint,
    Scope,
    ScriptedTurn,
    StateConflictFailure,
)

# -- hook concurrency, commits, conflicts ------------------------------------------------


async def test_hooks_of_one_point_run_concurrently_on_one_snapshot(make_plugin, make_runtime):
    point = PhaseHookPoint.STEP_START
    arrived = {"one": asyncio.Event(), "two": asyncio.Event()}
    seen: dict[str, list] = {"one": [], "two": []}

    def make_hook(me, other):
        async def hook(ctx):
            seen[me].append(ctx.store.get_value("votes"))
            arrived[me].set()
            # deadlocks (and times out) unless both hooks are in flight together
            await asyncio.wait_for(arrived[other].wait(), timeout=5)
            return HookReaction(
                commands=[Command.set("votes", {me: ctx.run.step}, merge=MergePolicy.COMMUTATIVE)]
            )

        return hook

    plugins = [
        make_plugin(
            me,
            {"phase_hooks": {point}, "state_keys": ["thread:votes"]},
            Contributions(phase_hooks={point: make_hook(me, other)}),
        )
        for me, other in (("one", "two"), ("two", "one"))
    ]
    tools, _ = counted_tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=plugins)
    state = await rig.run("go", thread_id="t")
    assert state.end_cause == NaturalEnd(), state.end_cause
    # both hooks saw the pre-phase value, step after step
    assert seen["one"] == seen["two"] == [None, {"one": 1, "two": 1}]
    assert state.value("votes") == {"one": 2, "two": 2}
    # one commit per phase, holding both hooks' commands
    step_start = [b for b in state.log if b.phase == "step_start"]
    assert len(step_start) == 2
    for batch in step_start:
        assert sorted(p for p, _c in batch.entries) == ["one", "two"]


def _tally_plugins(make_plugin, ids):
    point = PhaseHookPoint.STEP_END

    def make_hook(pid, n):
        async def hook(ctx):
            current = ctx.store.get_value("tally") or {}
            return HookReaction(
                commands=[
                    Command.set(
                        "tally", {pid: current.get(pid, 0) + n}, merge=MergePolicy.COMMUTATIVE
                    ),
                    Command.set("own-" + pid, n),
                ]
            )

        return hook

    return {
        pid: make_plugin(
            pid,
            {"phase_hooks": {point}, "state_keys": ["thread:tally", f"thread:own-{pid}"]},
            Contributions(phase_hooks={point: make_hook(pid, i + 1)}),
        )
        for i, pid in enumerate(ids)
    }


async def test_commutative_writes_are_order_independent(make_plugin, make_runtime):
    ids = ["pa", "pb", "pc"]
    plugins = _tally_plugins(make_plugin, ids)
    tools, _ = counted_tools()
    results = []
    for order in itertools.permutations(ids):
        rig = make_runtime(
            [ScriptedTurn.call("alpha"), "done"],
            tools=tools,
            plugins=[plugins[p] for p in order],
        )
        await rig.run("go", thread_id="t")
        results.append(rig.store.thread_state("t"))
    assert all(r == results[0] for r in results)
    assert results[0][(Scope.THREAD, "tally")] == {"pa": 2, "pb": 4, "pc": 6}


async def test_exclusive_conflict_names_both_plugins(make_plugin, make_runtime):
    point = PhaseHookPoint.STEP_START

    def make_hook(pid):
        async def hook(ctx):
            return HookReaction(
                commands=[
                    Command.set("lock", pid, merge=MergePolicy.EXCLUSIVE),
                    Command.set(f"mine-{pid}", True),
                ]
            )

        return hook

    plugins = [
        make_plugin(
            pid,
            {"phase_hooks": {point}, "state_keys": ["thread:lock", f"thread:mine-{pid}"]},
            Contributions(phase_hooks={point: make_hook(pid)}),
        )
        for pid in ("left", "right")
    ]
    rig = make_runtime(["never"], plugins=plugins)
    state = await rig.run("go", thread_id="t")
    failure = failure_of(state)
    assert isinstance(failure, StateConflictFailure)
    assert failure.key == "lock"
    assert set(failure.producers) == {"left", "right"}
    assert "left" in failure.message and "right" in failure.message
    assert rig.executor.calls == 0
    for key in ("lock", "mine-left", "mine-right"):
        assert state.value(key) is None
    assert rig.store.thread_state("t") == {}
