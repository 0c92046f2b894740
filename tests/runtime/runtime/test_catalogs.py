"""``ToolCatalog`` plugins: tools listed before each run, in the snapshot and its fingerprint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CapabilityBound,
    CapabilityBoundError,
    Contributions,
    ModelSpec,
    Phase,
    PluginManifest,
    ResumeRejected,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    Tool,
    ToolCallContext,
    ToolCatalog,
    ToolDescriptor,
    ToolOutput,
)


class Remote:
    """A tool whose descriptor the 'remote side' decides."""

    def __init__(self, name: str, description: str = "") -> None:
        self._descriptor = ToolDescriptor(id=name, description=description)
        self.calls = 0

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
        self.calls += 1
        return ToolOutput.ok(f"{self._descriptor.id} ran")


class Catalog:
    """A catalog plugin whose listing the test changes; counts listings and releases."""

    def __init__(self, tools: list[Tool], *, dynamic: bool = True, gate: bool = False) -> None:
        self.tools = tools
        self.listings: list[object] = []
        self.released: list[object] = []
        self._gate = gate
        self._manifest = PluginManifest(
            id="remote", bound=CapabilityBound(dynamic_tools=dynamic, tool_gates=gate)
        )

    @property
    def manifest(self) -> PluginManifest:
        return self._manifest

    def resolve(self, config: Any) -> Contributions:
        if not self._gate:
            return Contributions()

        def ask(ctx: Any, call: Any) -> Suspend:
            return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)

        return Contributions(tool_gates=[ask])

    async def catalog(self, config: Any, owner: object) -> Sequence[Tool]:
        self.listings.append(owner)
        return list(self.tools)

    async def release(self, owner: object) -> None:
        self.released.append(owner)


def build(plugin: Catalog, turns: list[Any]) -> Any:
    return (
        AgentRuntimeBuilder(discover=False)
        .with_plugin(plugin)
        .with_model(ModelSpec(id="m", provider="s", model="m"))
        .with_provider("s", ScriptedExecutor(turns))
        .with_agent_spec(AgentConfig(id="a", model_binding="m", plugin_ids=["remote"]))
        .with_agent_spec(AgentConfig(id="plain", model_binding="m"))
        .build()
    )


def test_a_catalog_plugin_is_a_tool_catalog() -> None:
    assert isinstance(Catalog([]), ToolCatalog)


async def test_listed_tools_run_and_are_in_the_snapshot() -> None:
    echo = Remote("echo", "first")
    plugin = Catalog([echo])
    rt = build(plugin, [ScriptedTurn.call("echo", {}), "done"])
    assert rt.resolve("a").tools == []  # nothing listed yet
    state = await rt.run("a", "go")
    assert state.final_text == "done" and echo.calls == 1
    assert [t.id for t in rt.resolve("a").tools] == ["echo"]
    assert plugin.listings == [rt]  # the owner is the runtime
    await rt.run("plain", "no catalog")  # an agent without the plugin never lists
    assert plugin.listings == [rt]


async def test_a_changed_listing_changes_the_fingerprint_and_rejects_parked_tickets() -> None:
    plugin = Catalog([Remote("echo", "first")], gate=True)
    rt = build(plugin, [ScriptedTurn.call("echo", {}), "done"])
    parked = await rt.run("a", "go")
    assert parked.phase is Phase.WAITING
    first = rt.resolve("a").fingerprint
    same = await rt.aresolve("a")
    assert same.fingerprint == first  # an unchanged listing keeps the resolution
    plugin.tools = [Remote("echo", "second")]  # the same id, a new description
    changed = await rt.aresolve("a")
    assert changed.fingerprint != first
    with pytest.raises(ResumeRejected, match="changed since the run parked"):
        await rt.resume(parked.tickets[0], Approve())


async def test_a_plugin_without_dynamic_tools_in_its_bound_cannot_list() -> None:
    rt = build(Catalog([Remote("echo")], dynamic=False), ["x"])
    with pytest.raises(CapabilityBoundError, match="dynamic_tools"):
        await rt.run("a", "go")


async def test_aclose_releases_every_catalog_plugin_for_this_runtime() -> None:
    plugin = Catalog([Remote("echo")])
    rt = build(plugin, ["x"])
    other = build(plugin, ["y"])
    await rt.aclose()
    assert plugin.released == [rt]
    await other.aclose()
    assert plugin.released == [rt, other]
