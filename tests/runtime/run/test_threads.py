"""Multi-turn threads: a second run sees the first's messages and thread state,
profile state is shared across threads, and a run record keeps its start time.
"""

from __future__ import annotations

from datetime import UTC, datetime

from loop_rig import request_summary

from awaken_runtime import (
    Command,
    Contributions,
    HookReaction,
    Phase,
    PhaseHookPoint,
    Scope,
    ScriptedTurn,
)
from awaken_runtime.testing import scripted_runtime

# -- multi-turn threads --------------------------------------------------------------------


def _visit_plugin(make_plugin, seen):
    point = PhaseHookPoint.RUN_START

    async def hook(ctx):
        visits = ctx.store.get_value("visits") or 0
        name = ctx.store.get_value("name", Scope.PROFILE)
        seen.append((ctx.run.thread_id, ctx.run.profile_id, visits, name))
        commands = [Command.set("visits", visits + 1)]
        if name is None:
            commands.append(Command.set("name", f"user-{ctx.run.profile_id}", scope=Scope.PROFILE))
        return HookReaction(commands=commands)

    return make_plugin(
        "visits",
        {"phase_hooks": {point}, "state_keys": ["thread:visits", "profile:name"]},
        Contributions(phase_hooks={point: hook}),
    )


async def test_second_run_sees_first_runs_messages_and_thread_state(make_plugin, make_runtime):
    seen: list = []
    rig = make_runtime(["one", "two"], plugins=[_visit_plugin(make_plugin, seen)])
    first = await rig.run("hello", thread_id="t")
    second = await rig.run("again", thread_id="t")
    assert [v for _t, _p, v, _n in seen] == [0, 1]
    assert second.value("visits") == 2
    assert request_summary(rig.executor.requests[1]) == [
        ("system", "You are a test agent."),
        ("user", "hello"),
        ("assistant", "one"),
        ("user", "again"),
    ]
    assert [m.text for m in first.new_messages] == ["hello", "one"]
    assert [m.text for m in second.new_messages] == ["again", "two"]
    assert [m.text for m in rig.messages("t")] == ["hello", "one", "again", "two"]


async def test_profile_state_is_shared_across_threads(make_plugin, make_runtime):
    seen: list = []
    rig = make_runtime(["a", "b", "c", "d"], plugins=[_visit_plugin(make_plugin, seen)])
    await rig.run("hi", thread_id="t1", profile_id="alice")
    await rig.run("hi", thread_id="t2", profile_id="alice")
    await rig.run("hi", thread_id="t3", profile_id="bob")
    await rig.run("hi", thread_id="t1", profile_id="bob")
    assert seen == [
        ("t1", "alice", 0, None),
        ("t2", "alice", 0, "user-alice"),
        ("t3", "bob", 0, None),
        ("t1", "bob", 1, "user-bob"),
    ]
    assert rig.messages("t2")[0].text == "hi" and len(rig.messages("t1")) == 4


async def test_run_record_keeps_the_start_time_and_ends_with_the_run() -> None:
    seen: list[datetime] = []

    def probe() -> str:
        """Record when the step ran."""
        seen.append(datetime.now(UTC))
        return "ok"

    rig = scripted_runtime([ScriptedTurn.call("probe"), "done"], tools=[probe])
    before = datetime.now(UTC)
    state = await rig.run(thread_id="t")
    after = datetime.now(UTC)
    record = await rig.store.get_run(state.run_id)
    assert record is not None and record.phase is Phase.ENDED and record.steps == 2
    # Started when the run started (not when it ended), updated at the end.
    assert before <= record.started_at <= seen[0] <= record.updated_at <= after
