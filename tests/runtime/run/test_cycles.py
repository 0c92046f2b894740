"""A finished run leaves no reference cycles of its own.

A run whose objects form a cycle (its context and the child runner pointing at
each other, the state engine and its store view, a file-store fsync round and
its own flush closure) is freed only by the cyclic collector: until a full
collection the run's whole transcript stays in memory, and with many
concurrent runs every collection walks those leftovers. Each case runs with
the collector off, then collects with ``DEBUG_SAVEALL`` and looks for any
``awaken_runtime`` object among what only the collector could free.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CancellationToken,
    CapabilityBound,
    ChildRunner,
    Command,
    Contributions,
    HookReaction,
    InferenceRequest,
    ModelSpec,
    Phase,
    PhaseContext,
    PhaseHookPoint,
    PluginManifest,
    Scope,
    ScriptedExecutor,
    ScriptedTurn,
    Set,
    Suspend,
    ToolCall,
    ToolCallContext,
    ToolError,
    tool,
)
from awaken_runtime.stores import FileStore, InMemoryStore, SQLiteStore

STORES: dict[str, Callable[[Path], Any]] = {
    "memory": lambda root: InMemoryStore(),
    "sqlite": lambda root: SQLiteStore(root / "a.db"),
    "file": lambda root: FileStore(root / "files"),
}


@tool
def lookup(q: str) -> str:
    """Look an order up."""
    return f"order {q}: shipped"


class Counting:
    """Writes a thread-scoped counter at every step start (the state engine's commit path)
    and, when ``park`` is set, parks the first ``lookup`` call for approval."""

    def __init__(self, park: bool = False) -> None:
        self.park = park
        self.manifest = PluginManifest(
            id="counting",
            bound=CapabilityBound(
                phase_hooks=frozenset({PhaseHookPoint.STEP_START}),
                state_keys=frozenset({"thread:steps"}),
                tool_gates=park,
            ),
        )

    def resolve(self, config: Any) -> Contributions:
        async def count(ctx: PhaseContext) -> HookReaction:
            seen = ctx.store.get_value("steps", Scope.THREAD, 0)
            command = Command(scope=Scope.THREAD, key="steps", action=Set(value=seen + 1))
            return HookReaction(commands=[command])

        def gate(ctx: Any, call: ToolCall) -> Suspend | None:
            if ctx.decision is None:
                return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
            return None

        return Contributions(
            phase_hooks={PhaseHookPoint.STEP_START: count},
            tool_gates=[gate] if self.park else [],
        )


def build(store: Any, turns: list[Any], plugin: Counting) -> Any:
    return (
        AgentRuntimeBuilder(discover=False)
        .with_tool(lookup)
        .with_plugin(plugin)
        .with_model(ModelSpec(id="m", provider="scripted", model="scripted"))
        .with_provider("scripted", ScriptedExecutor(turns, repeat=True))
        .with_store(store)
        .with_agent_spec(
            AgentConfig(id="a", model_binding="m", tool_ids=["lookup"], plugin_ids=["counting"])
        )
        .build()
    )


class Collector:
    """The collector held off: :meth:`start` begins a window, :meth:`leftovers` counts the
    awaken objects made in it that only the collector could free.

    Objects that exist when the window starts are pinned for its length, so a store an
    earlier test left open (its I/O thread ending in the window) is not counted.
    """

    def __init__(self) -> None:
        self._pinned: list[Any] = []

    def _collect(self) -> list[Any]:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            return list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()

    def start(self) -> None:
        self._collect()
        self._pinned = gc.get_objects()

    def leftovers(self) -> Counter[str]:
        found = Counter(
            f"{type(o).__module__}.{type(o).__qualname__}"
            for o in self._collect()
            if type(o).__module__.startswith("awaken_runtime")
        )
        self._pinned = []
        return found


@pytest.fixture
def collector() -> Iterator[Collector]:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield Collector()
    finally:
        if was_enabled:
            gc.enable()


TURNS = [ScriptedTurn.call("lookup", {"q": "42"}), "It has shipped."]


@pytest.mark.parametrize("kind", sorted(STORES))
async def test_a_run_with_a_tool_call_and_state_leaves_no_cycle(
    kind: str, tmp_path: Path, collector: Collector
) -> None:
    store = STORES[kind](tmp_path)
    runtime = build(store, TURNS, Counting())
    try:
        await runtime.run("a", "warm up", thread_id="warm")  # first-use caches, worker threads
        collector.start()
        for i in range(3):
            state = await runtime.run("a", "Where is order 42?", thread_id=f"t{i}")
            assert state.final_text == "It has shipped.", state.end_cause
        assert collector.leftovers() == Counter()
    finally:
        await store.close()


@pytest.mark.parametrize("kind", sorted(STORES))
async def test_a_parked_and_resumed_run_leaves_no_cycle(
    kind: str, tmp_path: Path, collector: Collector
) -> None:
    store = STORES[kind](tmp_path)
    runtime = build(store, TURNS, Counting(park=True))
    try:
        warm = await runtime.run("a", "warm up", thread_id="warm")
        await runtime.resume(warm.tickets[0], Approve())
        collector.start()
        waiting = await runtime.run("a", "Where is order 42?", thread_id="t")
        assert waiting.phase is Phase.WAITING
        done = await runtime.resume(waiting.tickets[0], Approve())
        assert done.final_text == "It has shipped.", done.end_cause
        assert collector.leftovers() == Counter()
    finally:
        await store.close()


@tool
def failing(q: str) -> str:
    """Fails softly: the model sees the error and answers."""
    raise ValueError(f"no order {q}")


@tool
def broken(q: str) -> str:
    """Fails hard: the run ends with a tool failure."""
    raise ToolError(f"the order service is down for {q}")


@tool
async def hanging(q: str) -> str:
    """Never answers before the run is cancelled."""
    await asyncio.sleep(60)
    return "late"


class Down:
    """A provider whose every request raises."""

    async def stream(self, request: InferenceRequest) -> AsyncIterator[Any]:
        raise ConnectionError("provider down")
        yield  # pragma: no cover - makes this an async generator


async def _ends(runtime: Any, thread_id: str, *, cancel: bool) -> Any:
    if not cancel:
        return await runtime.run("a", "Where is order 42?", thread_id=thread_id)
    token = CancellationToken()
    task = asyncio.create_task(
        runtime.run("a", "Where is order 42?", thread_id=thread_id, cancel=token)
    )
    await asyncio.sleep(0.05)  # the tool is running
    token.cancel()
    return await task


ENDINGS: dict[str, tuple[Any, bool, str]] = {
    # how the run ends: (the tool, whether the provider raises, the end cause's class)
    "tool error seen by the model": (failing, False, "NaturalEnd"),
    "ToolError": (broken, False, "Error"),
    "provider raising": (failing, True, "Error"),
    "cancelled mid-tool": (hanging, False, "Cancelled"),
}


@pytest.mark.parametrize("how", sorted(ENDINGS))
async def test_a_run_ending_in_a_failure_or_cancelled_leaves_no_cycle(
    how: str, collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    # Exceptions are where cycles usually come from (a traceback holds the frames that
    # hold it): each way a run ends on one must still leave nothing to the collector.
    # The runtime logs a raising tool with its traceback; a captured record would keep
    # the run's frames alive past the check, hiding a cycle among them.
    caplog.set_level(logging.CRITICAL, logger="awaken_runtime")
    tool_, down, cause = ENDINGS[how]

    def turn(request: InferenceRequest) -> ScriptedTurn | str:
        # Answers by the request, not by position: a run ended early leaves no turn behind.
        if request.messages[-1].role == "tool":
            return "done"
        return ScriptedTurn.call(tool_.descriptor.id, {"q": "42"})

    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_tool(tool_)
        .with_model(ModelSpec(id="m", provider="p", model="scripted"))
        .with_provider("p", Down() if down else ScriptedExecutor([turn], repeat=True))
        .with_agent_spec(
            AgentConfig(id="a", model_binding="m", tool_ids=[tool_.descriptor.id], max_steps=5)
        )
        .build()
    )
    cancel = how == "cancelled mid-tool"
    await _ends(runtime, "warm", cancel=cancel)
    collector.start()
    state = await _ends(runtime, "t", cancel=cancel)
    assert type(state.end_cause).__name__ == cause, state.end_cause
    del state
    assert collector.leftovers() == Counter()


async def test_a_child_runner_kept_past_its_run_says_the_run_has_ended() -> None:
    kept: list[Any] = []

    @tool
    def keep(ctx: ToolCallContext) -> str:
        """Keep the run's child runner."""
        kept.append(ctx.children)
        assert isinstance(ctx.children, ChildRunner)
        assert ctx.children.child_thread("k") == "t/k"  # usable while the run runs
        return "kept"

    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_tool(keep)
        .with_model(ModelSpec(id="m", provider="scripted", model="scripted"))
        .with_provider("scripted", ScriptedExecutor([ScriptedTurn.call("keep", {}), "done"]))
        .with_agent_spec(AgentConfig(id="a", model_binding="m", tool_ids=["keep"]))
        .build()
    )
    state = await runtime.run("a", "go", thread_id="t")
    assert state.final_text == "done"
    del state
    gc.collect()
    with pytest.raises(RuntimeError, match="parent run has ended"):
        kept[0].child_thread("k")
