"""The producers of one point: eager where they do not wait, concurrent once one waits.

``call_all`` is what every hook point runs through (phase hooks, gates,
observers, stop conditions, scheduled actions), so these tests drive it
directly with mixed sets: hooks that never suspend, hooks that suspend midway,
hooks that raise before or after suspending, and cancellation of the caller.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from typing import Any

import pytest

from awaken_runtime import (
    CancellationToken,
    Cancelled,
    CapabilityBound,
    Command,
    Contributions,
    HookReaction,
    PhaseContext,
    PhaseHookPoint,
    Scope,
)
from awaken_runtime.run._dispatch import Producer, call_all
from awaken_runtime.run._signals import End

BI = PhaseHookPoint.BEFORE_INFERENCE

Calls = list[tuple[str, Callable[[], Any]]]


def thunks(calls: Calls) -> list[Producer]:
    """Producers of ``(id, thunk)`` pairs: each thunk is called with no argument."""
    return [(pid, operator.call, fn) for pid, fn in calls]


async def quick(log: list[str], name: str) -> str:
    log.append(f"{name} ran")
    return name


def failure(raised: pytest.ExceptionInfo[End]) -> Any:
    return raised.value.cause.failure


async def test_hooks_that_never_wait_run_in_the_calling_task_in_order() -> None:
    me = asyncio.current_task()
    seen: list[Any] = []

    async def hook(name: str) -> str:
        seen.append((name, asyncio.current_task() is me))
        return name

    def plain() -> str:  # a synchronous producer (a gate may be one)
        return "plain"

    calls: Calls = [("a", lambda: hook("a")), ("p", plain), ("b", lambda: hook("b"))]
    assert await call_all("X", thunks(calls)) == [("a", "a"), ("p", "plain"), ("b", "b")]
    assert seen == [("a", True), ("b", True)]


async def test_a_hook_that_awaits_midway_runs_with_the_later_ones_concurrently() -> None:
    """The first waits for an event a later hook sets: deadlocks unless both are in flight."""
    later_ran = asyncio.Event()
    log: list[str] = []

    async def waits() -> str:
        log.append("waits started")
        await asyncio.wait_for(later_ran.wait(), timeout=5)
        log.append("waits finished")
        return "waited"

    async def sets() -> str:
        log.append("sets ran")
        later_ran.set()
        await asyncio.sleep(0)
        return "set"

    calls: Calls = [
        ("first", lambda: quick(log, "first")),
        ("waits", waits),
        ("sync-after", lambda: quick(log, "sync-after")),
        ("sets", sets),
    ]
    results = await call_all("X", thunks(calls))
    # producer order, whatever finished first
    assert results == [
        ("first", "first"),
        ("waits", "waited"),
        ("sync-after", "sync-after"),
        ("sets", "set"),
    ]
    assert log.index("waits started") < log.index("sets ran") < log.index("waits finished")


async def test_a_future_returned_by_a_producer_is_awaited() -> None:
    future = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(future.set_result, "late")
    assert await call_all("X", thunks([("f", lambda: future), ("g", lambda: "now")])) == [
        ("f", "late"),
        ("g", "now"),
    ]


async def test_a_hook_raising_before_it_awaits_fails_the_point_and_later_hooks_never_start() -> (
    None
):
    log: list[str] = []

    async def bad() -> None:
        raise ValueError("before any await")

    calls: Calls = [
        ("ok", lambda: quick(log, "ok")),
        ("bad", bad),
        ("after", lambda: quick(log, "after")),
    ]
    with pytest.raises(End) as raised:
        await call_all("STEP_START", thunks(calls))
    found = failure(raised)
    assert (found.plugin_id, found.hook) == ("bad", "STEP_START")
    assert "ValueError: before any await" in found.message
    assert isinstance(raised.value.__cause__, ValueError)
    assert log == ["ok ran"]


async def test_a_hook_raising_after_it_awaited_fails_the_point_and_cancels_the_waiting_ones() -> (
    None
):
    cancelled: list[str] = []
    never = asyncio.Event()

    async def bad() -> None:
        await asyncio.sleep(0)
        raise KeyError("after an await")

    async def stuck(name: str) -> None:
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    # the raiser suspends first (it continues in the calling task) ...
    with pytest.raises(End) as raised:
        await call_all("X", thunks([("bad", bad), ("stuck", lambda: stuck("stuck"))]))
    assert failure(raised).plugin_id == "bad" and "KeyError" in failure(raised).message
    assert cancelled == ["stuck"]
    # ... or a later one raises (in its own task) while the first still waits
    with pytest.raises(End) as raised:
        await call_all("X", thunks([("stuck", lambda: stuck("first")), ("bad", bad)]))
    assert failure(raised).plugin_id == "bad"
    assert cancelled == ["stuck", "first"]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_cancelling_the_caller_during_a_mixed_set_cancels_every_waiting_hook() -> None:
    cancelled: list[str] = []
    both_waiting = asyncio.Event()
    arrived: list[str] = []
    never = asyncio.Event()

    async def waiting(name: str) -> None:
        arrived.append(name)
        if len(arrived) == 2:
            both_waiting.set()
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    log: list[str] = []
    calls: Calls = [
        ("sync", lambda: quick(log, "sync")),
        ("w1", lambda: waiting("w1")),
        ("w2", lambda: waiting("w2")),
    ]
    task = asyncio.create_task(call_all("X", thunks(calls)))
    await asyncio.wait_for(both_waiting.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["w1", "w2"] and log == ["sync ran"]
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


@pytest.mark.parametrize("position", ["first to wait", "started later"])
async def test_a_hook_timeout_scope_times_out_inside_that_hook(position: str) -> None:
    """``asyncio.timeout`` belongs to the task the hook runs in, eager start or not."""
    never = asyncio.Event()
    release = asyncio.Event()

    async def timed() -> str:
        try:
            async with asyncio.timeout(0.01):
                await never.wait()
        except TimeoutError:
            release.set()
            return "timed out"
        return "not reached"

    async def patient() -> str:
        await asyncio.wait_for(release.wait(), timeout=5)
        return "released"

    calls: Calls = [("timed", timed), ("patient", patient)]
    if position == "started later":
        calls.reverse()
    results = dict(await call_all("X", thunks(calls)))
    assert results == {"timed": "timed out", "patient": "released"}
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_mixed_phase_commits_every_hooks_commands_on_one_snapshot(
    make_parts: Any, make_plugin: Any
) -> None:
    seen: list[Any] = []

    def plugin(pid: str, waits: bool) -> Any:
        async def hook(ctx: PhaseContext) -> HookReaction:
            if waits:
                await asyncio.sleep(0)
            seen.append((ctx.plugin_id, ctx.store.get_value("sync", Scope.RUN)))
            return HookReaction(commands=[Command.set(pid, ctx.run.step, scope=Scope.RUN)])

        return make_plugin(
            pid,
            CapabilityBound(phase_hooks={BI}, state_keys=[f"run:{pid}"]),
            Contributions(phase_hooks={BI: hook}),
        )

    run = make_parts(plugins=[plugin("sync", False), plugin("slow", True), plugin("tail", False)])
    await run.phases.phase(BI)
    # every hook saw the pre-phase snapshot, eager or not, and one batch holds all three
    assert sorted(seen) == [("slow", None), ("sync", None), ("tail", None)]
    assert len(run.leg.engine.log) == 1
    assert sorted(p for p, _c in run.leg.engine.log[0].entries) == ["slow", "sync", "tail"]


async def test_a_cancel_during_a_mixed_phase_ends_the_run_at_its_boundary(
    make_runtime: Any, make_plugin: Any
) -> None:
    """Hooks are not interrupted: the phase finishes, then the run ends ``Cancelled``."""
    point = PhaseHookPoint.STEP_START
    token = CancellationToken()
    release = asyncio.Event()
    ran: list[str] = []

    async def eager(ctx: PhaseContext) -> None:
        ran.append("eager")

    async def waits(ctx: PhaseContext) -> None:
        await asyncio.wait_for(release.wait(), timeout=5)
        ran.append("waits")

    async def cancels(ctx: PhaseContext) -> None:
        await asyncio.sleep(0)
        token.cancel("user pressed stop")
        release.set()
        ran.append("cancels")

    plugins = [
        make_plugin(pid, {"phase_hooks": {point}}, Contributions(phase_hooks={point: fn}))
        for pid, fn in (("eager", eager), ("waits", waits), ("cancels", cancels))
    ]
    rig = make_runtime(["never"], plugins=plugins)
    state = await rig.run("go", thread_id="t", cancel=token)
    assert state.end_cause == Cancelled(), state.end_cause
    assert sorted(ran) == ["cancels", "eager", "waits"]
    assert rig.executor.calls == 0  # the step never reached inference


@pytest.mark.parametrize("suspends", [False, True])
async def test_a_store_corrupt_a_producer_reads_is_the_stores_failure_not_the_plugins(
    suspends: bool,
) -> None:
    from awaken_runtime.stores import StoreCorrupt

    async def reads_a_damaged_message() -> None:
        if suspends:
            await asyncio.sleep(0)
        raise StoreCorrupt("/data/a.db", "thread 't1' message row 2 is not a valid Message")

    async def buggy() -> None:
        if suspends:
            await asyncio.sleep(0)
        raise ValueError("a plugin's own bug")

    with pytest.raises(StoreCorrupt, match="message row 2"):
        await call_all("BEFORE_INFERENCE", thunks([("p", reads_a_damaged_message)]))
    with pytest.raises(End) as raised:  # any other exception is still the plugin's
        await call_all("BEFORE_INFERENCE", thunks([("p", buggy)]))
    assert failure(raised).plugin_id == "p" and "own bug" in failure(raised).message


@pytest.mark.parametrize("denier", ["waits", "eager"])
async def test_gates_that_wait_still_deny_and_the_denied_call_never_runs(
    make_runtime: Any, make_plugin: Any, denier: str
) -> None:
    """Gates run through the same producers as hooks: one that waits (before or after
    the denying one) still sees its own context and the call, and the denial wins."""
    from awaken_runtime import ScriptedTurn, tool
    from awaken_runtime.plugins._gates import Block

    ran: list[str] = []
    seen: list[tuple[str, str, Any]] = []

    @tool
    def wipe(path: str) -> str:
        """Delete a path."""
        ran.append(path)
        return "wiped"

    def gate_plugin(pid: str, waits: bool, deny: bool) -> Any:
        async def gate(ctx: PhaseContext, call: Any) -> Any:
            if waits:
                await asyncio.sleep(0)
                await asyncio.sleep(0)
            seen.append((pid, ctx.plugin_id, call.arguments))
            return Block(reason=f"{pid} says no") if deny else None

        return make_plugin(pid, CapabilityBound(tool_gates=True), Contributions(tool_gates=[gate]))

    plugins = [
        gate_plugin("first", waits=True, deny=denier == "waits"),
        gate_plugin("second", waits=False, deny=denier == "eager"),
        gate_plugin("third", waits=True, deny=False),
    ]
    rig = make_runtime(
        [ScriptedTurn.call("wipe", {"path": "/etc/../etc/passwd"}), "done"],
        tools=[wipe],
        plugins=plugins,
    )
    state = await rig.run("go", thread_id="t")
    assert state.end_cause.kind == "natural_end", state.end_cause
    assert ran == []
    tool_msg = next(m for m in state.new_messages if m.role == "tool")
    assert tool_msg.content == f"{'first' if denier == 'waits' else 'second'} says no"
    # every gate ran once, saw its own plugin id and the call's arguments
    args = {"path": "/etc/../etc/passwd"}
    assert sorted(seen) == [(p, p, args) for p in ("first", "second", "third")]


async def test_observers_stop_conditions_actions_and_guards_that_wait_see_their_own_context(
    make_runtime: Any, make_plugin: Any
) -> None:
    """Every producer kind takes its context as its argument: when the first plugin's
    producer waits, the later ones start in Tasks with their own context, none is
    dropped or run twice, and the tool still runs exactly once."""
    from awaken_runtime import Complete, ScheduledAction, ScriptedTurn, Stopped, tool

    ran: list[str] = []
    seen: list[tuple[str, str, str]] = []  # (producer kind, plugin, what its context said)

    @tool
    def wipe(path: str) -> str:
        """Delete a path."""
        ran.append(path)
        return "wiped"

    def plugin(pid: str, waits: bool, stops: bool) -> Any:
        async def pause() -> None:
            if waits:
                await asyncio.sleep(0)
                await asyncio.sleep(0)

        async def observe(ctx: PhaseContext) -> None:
            await pause()
            seen.append(("observer", pid, f"{ctx.plugin_id}:{ctx.tool_call.arguments}"))  # type: ignore[union-attr]

        async def stop(ctx: PhaseContext) -> str | None:
            await pause()
            seen.append(("stop", pid, ctx.plugin_id))
            return "enough" if stops else None

        async def schedule(ctx: PhaseContext) -> HookReaction | None:
            if ctx.run.step != 1:
                return None
            action = ScheduledAction(name=f"tick-{pid}", payload={"by": pid}, point=BI)
            return HookReaction(schedule=[action])

        async def tick(action: ScheduledAction, ctx: PhaseContext) -> None:
            await pause()
            seen.append(("action", pid, f"{ctx.plugin_id}:{action.payload['by']}"))

        async def guard(ctx: PhaseContext) -> Any:
            await pause()
            seen.append(("guard", pid, ctx.plugin_id))
            return Complete()

        bound = CapabilityBound(
            phase_hooks={PhaseHookPoint.STEP_START},
            tool_observers=True,
            stop_conditions=True,
            action_handlers={f"tick-{pid}"},
            run_end_guards=True,
        )
        contributions = Contributions(
            phase_hooks={PhaseHookPoint.STEP_START: schedule},
            tool_observers=[observe],
            stop_conditions=[stop],
            action_handlers={f"tick-{pid}": tick},
            run_end_guards=[guard],
        )
        return make_plugin(pid, bound, contributions)

    # One step with a tool call (observers, actions, stop conditions), then an answer
    # (guards); "second" stops the run only once the guards have had their turn.
    plugins = [plugin("first", True, False), plugin("second", False, False)]
    plugins.append(plugin("third", False, False))
    args = {"path": "/tmp/../etc"}
    rig = make_runtime([ScriptedTurn.call("wipe", args), "done"], tools=[wipe], plugins=plugins)
    state = await rig.run("go", thread_id="t")
    assert state.end_cause.kind == "natural_end", state.end_cause
    assert ran == ["/tmp/../etc"]
    pids = ("first", "second", "third")
    for kind, said in (
        ("observer", lambda p: f"{p}:{args}"),
        ("action", lambda p: f"{p}:{p}"),
        ("guard", lambda p: p),
    ):
        assert sorted(s for s in seen if s[0] == kind) == [(kind, p, said(p)) for p in pids]
    # stop conditions are asked after each step: the same three every time
    stops = [s for s in seen if s[0] == "stop"]
    assert stops and len(stops) % 3 == 0
    assert all(who == ctx_id for _k, who, ctx_id in stops)

    # a waiting plugin before the one that stops does not hide its reason
    stopping = [plugin("first", True, False), plugin("second", False, True)]
    rig = make_runtime([ScriptedTurn.call("wipe", args), "done"], tools=[wipe], plugins=stopping)
    state = await rig.run("go", thread_id="t2")
    assert state.end_cause == Stopped(reason="second: enough"), state.end_cause
