"""A ``RunDeps`` built by hand, for ``ToolCallExecutor`` tests that need no runtime and no loop.

``fake_deps(*tools, gates=..., observers=..., after_tool=...)`` wires the
given tools and plugin callables into a ``ResolvedAgent`` directly (no
registries, no resolution) over an ``InMemoryStore``; its executor fails if
anything asks it for an inference. ``Rig`` is one leg over those deps: the
phase engine and the executor, and the tool results the transcript holds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from awaken_runtime import (
    AgentConfig,
    CapabilityBound,
    InMemoryStore,
    ModelSpec,
    PhaseHookPoint,
    ScopeBinding,
)
from awaken_runtime.agents._resolve import ExecutableAgentSnapshot, ResolvedAgent
from awaken_runtime.run._deps import RunDeps
from awaken_runtime.run._leg import LegState
from awaken_runtime.run._phases import PhaseEngine
from awaken_runtime.run._tool_calls import ToolCallExecutor

Hook = tuple[str, Callable[..., Any]]


class NoInference:
    """An executor for runs that must never reach the model."""

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        raise AssertionError("the tool-call executor asked for an inference")
        yield  # pragma: no cover - makes this an async generator


def fake_deps(
    *tools: Any,
    gates: Sequence[Hook] = (),
    observers: Sequence[Hook] = (),
    after_tool: Sequence[Hook] = (),
    emit: Callable[[Any], None] | None = None,
) -> RunDeps:
    """``RunDeps`` of an agent with ``tools`` and the given plugin callables, built by hand."""
    config = AgentConfig(id="agent", model_binding="m")
    model = ModelSpec(id="m", provider="fake", model="fake")
    descriptors = [t.descriptor for t in tools]
    snapshot = ExecutableAgentSnapshot(
        config=config, tools=descriptors, model=model, plugins=[], fingerprint="f" * 64
    )
    agent = ResolvedAgent(snapshot, NoInference(), {t.descriptor.id: t for t in tools})
    agent.gates = list(gates)
    agent.observers = list(observers)
    if after_tool:
        agent.hooks[PhaseHookPoint.AFTER_TOOL] = list(after_tool)
    everything = CapabilityBound(tool_gates=True, tool_observers=True)
    for pid, _ in [*gates, *observers, *after_tool]:
        agent.bounds[pid] = everything
    binding = ScopeBinding("t", "default", "default")
    return RunDeps(agent, InMemoryStore(), binding, "run_1", emit=emit)


class Rig:
    """One leg over ``deps``: its state, phase engine and tool-call executor."""

    def __init__(self, deps: RunDeps) -> None:
        self.deps = deps
        self.leg = LegState()
        self.phases = PhaseEngine(deps, self.leg)
        self.calls = ToolCallExecutor(deps, self.leg, self.phases)

    def results(self) -> list[tuple[str | None, str, bool]]:
        """``(call id, text, is_error)`` of each tool result in the transcript, in order."""
        return [
            (m.tool_call_id, m.text, bool(m.metadata.get("is_error")))
            for m in self.leg.transcript.view()
            if m.role == "tool"
        ]
