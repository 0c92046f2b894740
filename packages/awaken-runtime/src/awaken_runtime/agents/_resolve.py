"""Resolution: a pure function of (registries, agent id) to an executable agent.

The serializable half is :class:`ExecutableAgentSnapshot` (config, tool
descriptors, model spec, plugin manifests and validated config) with a
:data:`CatalogFingerprint`. The live half, :class:`ResolvedAgent`, adds the
objects the loop calls: tools, the executor, and every plugin contribution,
already checked against each plugin's capability bound.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, ValidationError

from .._errors import AgentConfigError, CapabilityBoundError, ResolutionError
from ..delegation._service import AGENT_RUN
from ..models._model import LlmExecutor, ModelSpec
from ..plugins._actions import ActionHandler, EffectHandler
from ..plugins._plugin import (
    CapabilityBound,
    Contributions,
    PhaseHook,
    PhaseHookPoint,
    Plugin,
    PluginManifest,
    RunEndGuard,
    StateKeyDecl,
    StopConditionHook,
    ToolGateHook,
    ToolObserver,
    _decl,
)
from ..tools._tool import Tool, ToolDescriptor
from ._config import AgentConfig

__all__ = ["CatalogFingerprint", "ExecutableAgentSnapshot", "ResolvedPlugin"]

CatalogFingerprint: TypeAlias = str
"""Hex sha256 of the canonical JSON of a snapshot's contents."""


class ResolvedPlugin(BaseModel):
    """A plugin as the snapshot records it: manifest and validated config."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    manifest: PluginManifest
    config: dict[str, Any]


class ExecutableAgentSnapshot(BaseModel):
    """The resolved, serializable description of an agent at one point in time."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    config: AgentConfig
    tools: list[ToolDescriptor]
    model: ModelSpec
    plugins: list[ResolvedPlugin]
    fingerprint: CatalogFingerprint

    @staticmethod
    def compute_fingerprint(
        config: AgentConfig,
        tools: list[ToolDescriptor],
        model: ModelSpec,
        plugins: list[ResolvedPlugin],
    ) -> CatalogFingerprint:
        """The stable hash of everything the agent's behaviour depends on."""
        body = {
            "config": config.model_dump(mode="json"),
            "tools": [t.model_dump(mode="json") for t in tools],
            "model": model.model_dump(mode="json"),
            "plugins": [p.model_dump(mode="json") for p in plugins],
        }
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


class Registries:
    """The five registries an agent is resolved against."""

    # Plain classes here, not dataclasses: generating a dataclass's methods at import
    # costs more than a short run itself (see tests/runtime/test_working_import.py).
    __slots__ = (
        "agents",
        "models",
        "plugins",
        "providers",
        "remote_agents",
        "tools",
        "unavailable_plugins",
        "unavailable_providers",
        "unavailable_tools",
    )

    def __init__(
        self,
        *,
        agents: dict[str, AgentConfig] | None = None,
        tools: dict[str, Tool] | None = None,
        models: dict[str, ModelSpec] | None = None,
        providers: dict[str, LlmExecutor] | None = None,
        plugins: dict[str, Plugin] | None = None,
        remote_agents: dict[str, Any] | None = None,
    ) -> None:
        self.agents = agents if agents is not None else {}
        self.tools = tools if tools is not None else {}
        self.models = models if models is not None else {}
        self.providers = providers if providers is not None else {}
        self.plugins = plugins if plugins is not None else {}
        self.remote_agents = remote_agents if remote_agents is not None else {}
        """Agent ids served elsewhere (remote delegates), each with its delegation service."""
        self.unavailable_plugins: dict[str, Exception] = {}
        """Plugin ids that failed to load or clash, with the error to report."""
        self.unavailable_tools: dict[str, Exception] = {}
        """Discovered tool ids registered twice, with the error to report."""
        self.unavailable_providers: dict[str, Exception] = {}
        """Discovered provider ids registered twice, with the error to report."""


class ResolvedAgent:
    """A snapshot plus the live objects the loop calls (hooks, gates ... per plugin id)."""

    __slots__ = (
        "action_handlers",
        "bounds",
        "dynamic_tools",
        "effect_handlers",
        "executor",
        "gates",
        "guards",
        "hooks",
        "inherited",
        "inherited_gates",
        "observers",
        "snapshot",
        "stop_conditions",
        "tool_owner",
        "tools",
    )

    def __init__(
        self, snapshot: ExecutableAgentSnapshot, executor: LlmExecutor, tools: dict[str, Tool]
    ) -> None:
        self.snapshot = snapshot
        self.executor = executor
        self.tools = tools
        self.tool_owner: dict[str, str] = {}
        self.bounds: dict[str, CapabilityBound] = {}
        self.hooks: dict[PhaseHookPoint, list[tuple[str, PhaseHook]]] = {}
        self.gates: list[tuple[str, ToolGateHook]] = []
        self.observers: list[tuple[str, ToolObserver]] = []
        self.guards: list[tuple[str, RunEndGuard]] = []
        self.dynamic_tools: list[tuple[str, Any]] = []
        self.effect_handlers: dict[str, tuple[str, EffectHandler]] = {}
        self.action_handlers: dict[str, tuple[str, ActionHandler]] = {}
        self.stop_conditions: list[tuple[str, StopConditionHook]] = []
        self.inherited: set[str] = set()
        """Plugins whose contributions also apply to this agent's sub-agents."""
        self.inherited_gates: list[tuple[str, ToolGateHook]] = []
        """The gates of inheritable plugins (this agent's and its ancestors'): every
        sub-agent carries them, whatever it enables itself."""

    def with_inherited(self, parent: ResolvedAgent) -> ResolvedAgent:
        """This agent plus the parent's inheritable plugins it does not enable itself.

        The parent's inherited *gates* apply even when this agent enables the
        same plugin with its own configuration: the strongest gate decision
        wins, so a sub-agent can narrow what its parents allow, never widen it
        (through any number of levels).
        """
        extra = parent.inherited - set(self.bounds)
        own = {id(gate) for _, gate in self.gates}
        carried = [(pid, g) for pid, g in parent.inherited_gates if id(g) not in own]
        if not extra and not carried:
            return self

        def pick(items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
            return [(pid, item) for pid, item in items if pid in extra]

        hooks = {point: list(items) for point, items in self.hooks.items()}
        for point, items in parent.hooks.items():
            hooks.setdefault(point, []).extend(pick(items))
        combined = copy.copy(self)  # the rest (tools, handlers ...) shared, as before
        combined.bounds = {**self.bounds, **{pid: parent.bounds[pid] for pid in extra}}
        combined.hooks = hooks
        combined.gates = [*self.gates, *carried]
        combined.inherited_gates = [*self.inherited_gates, *carried]
        combined.observers = [*self.observers, *pick(parent.observers)]
        combined.guards = [*self.guards, *pick(parent.guards)]
        combined.stop_conditions = [*self.stop_conditions, *pick(parent.stop_conditions)]
        combined.inherited = self.inherited | extra
        return combined

    @property
    def config(self) -> AgentConfig:
        """The agent's configuration."""
        return self.snapshot.config


def _lookup(agent_id: str, kind: str, key: str, table: Mapping[str, Any]) -> Any:
    try:
        return table[key]
    except KeyError:
        raise ResolutionError(agent_id, kind, key, table.keys()) from None


def _validate_plugin_config(agent_id: str, plugin: Plugin, raw: dict[str, Any]) -> Any:
    manifest = plugin.manifest
    model = manifest.config_model
    if model is None:
        if raw:
            raise AgentConfigError(
                f"agent {agent_id!r}: plugin {manifest.id!r} takes no configuration, but "
                f"plugin_config.{manifest.id} sets {', '.join(sorted(raw))}; remove that table"
            )
        return None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in err['loc']) or '(root)'}': {err['msg']}"
            for err in exc.errors()
        )
        raise AgentConfigError(
            f"agent {agent_id!r}: invalid config for plugin {manifest.id!r}: {problems}"
        ) from None


def check_contributions(plugin_id: str, bound: CapabilityBound, c: Contributions) -> None:
    """Raise :class:`CapabilityBoundError` if ``c`` exceeds ``bound``."""
    for t in c.tools:
        tid = t.descriptor.id
        if tid not in bound.tool_ids:
            raise CapabilityBoundError(
                plugin_id, f"tool_ids {{{tid!r}}}", f"contributes tool {tid!r}"
            )
    for raw in c.state_keys:
        decl = StateKeyDecl.model_validate(_decl(raw))
        if decl not in bound.state_keys:
            raise CapabilityBoundError(
                plugin_id, f"state key {decl}", f"contributes state key {decl}"
            )
    for point in c.phase_hooks:
        point = PhaseHookPoint(point)
        if c.hooks_at(point) and point not in bound.phase_hooks:
            raise CapabilityBoundError(
                plugin_id, f"phase_hooks {{{point.name}}}", f"contributes a {point.name} hook"
            )
    for kind in ("effect_handlers", "action_handlers"):
        allowed: frozenset[str] = getattr(bound, kind)
        for name in getattr(c, kind):
            if name not in allowed:
                raise CapabilityBoundError(
                    plugin_id, f"{kind} {{{name!r}}}", f"handles {kind[:-9]} {name!r}"
                )
    flags = (
        ("tool_gates", c.tool_gates),
        ("tool_observers", c.tool_observers),
        ("run_end_guards", c.run_end_guards),
        ("dynamic_tools", c.dynamic_tools),
        ("stop_conditions", c.stop_conditions),
    )
    for name, items in flags:
        if items and not getattr(bound, name):
            raise CapabilityBoundError(plugin_id, f"{name}=True", f"contributes {name}")


def resolve_agent(
    registries: Registries,
    agent_id: str,
    delegation_tool_id: str = AGENT_RUN,
    catalogs: Mapping[str, Sequence[Tool]] | None = None,
) -> ResolvedAgent:
    """Resolve ``agent_id``; errors name the missing id and list what is available.

    ``catalogs`` holds, per plugin id, the tools a ``ToolCatalog`` plugin
    listed for this agent (see ``runtime/_catalogs.py``); they count as that
    plugin's contributions.
    """
    config: AgentConfig = _lookup(agent_id, "agent", agent_id, registries.agents)
    model: ModelSpec = _lookup(agent_id, "model", config.model_binding, registries.models)
    if model.provider in registries.unavailable_providers:
        raise registries.unavailable_providers[model.provider]
    executor = _lookup(agent_id, "provider", model.provider, registries.providers)
    tools = _agent_tools(registries, agent_id, config)
    resolved = ResolvedAgent(
        snapshot=None,  # type: ignore[arg-type]  # set below, once tools are known
        executor=executor,
        tools=tools,
    )
    plugins: list[ResolvedPlugin] = []
    for pid in config.plugin_ids:
        if pid in registries.unavailable_plugins:
            raise registries.unavailable_plugins[pid]
        plugin: Plugin = _lookup(agent_id, "plugin", pid, registries.plugins)
        validated = _validate_plugin_config(agent_id, plugin, config.plugin_config.get(pid, {}))
        listed = catalogs.get(pid, ()) if catalogs else ()
        _add_plugin(resolved, agent_id, pid, plugin.manifest, plugin.resolve(validated), listed)
        dumped = validated.model_dump(mode="json") if isinstance(validated, BaseModel) else {}
        plugins.append(ResolvedPlugin(manifest=plugin.manifest, config=dumped))
    if config.delegates:
        _add_delegation(tools, agent_id, list(config.delegates), delegation_tool_id)
    descriptors = [t.descriptor for t in tools.values()]
    resolved.snapshot = _snapshot(
        config=config,
        tools=descriptors,
        model=model,
        plugins=plugins,
        fingerprint=ExecutableAgentSnapshot.compute_fingerprint(
            config, descriptors, model, plugins
        ),
    )
    return resolved


def _agent_tools(registries: Registries, agent_id: str, config: AgentConfig) -> dict[str, Tool]:
    """The agent's own tools; also checks its delegates and plugin tables name what exists."""
    for tid in config.tool_ids:
        if tid in registries.unavailable_tools:
            raise registries.unavailable_tools[tid]
    tools: dict[str, Tool] = {
        tid: _lookup(agent_id, "tool", tid, registries.tools) for tid in config.tool_ids
    }
    delegates = {**registries.agents, **registries.remote_agents}  # local and remote peers
    for delegate in config.delegates:
        _lookup(agent_id, "delegate agent", delegate, delegates)
    stray = set(config.plugin_config) - set(config.plugin_ids)
    if stray:
        raise AgentConfigError(
            f"agent {agent_id!r} has plugin_config for {', '.join(sorted(stray))} but does not "
            f"enable it; add the id to plugin_ids or remove the table"
        )
    return tools


def _add_plugin(
    resolved: ResolvedAgent,
    agent_id: str,
    pid: str,
    manifest: PluginManifest,
    contributions: Contributions,
    listed: Sequence[Tool],
) -> None:
    """Add what plugin ``pid`` contributes (within its bound) to ``resolved``."""
    check_contributions(pid, manifest.bound, contributions)
    if listed and not manifest.bound.dynamic_tools:
        raise CapabilityBoundError(pid, "dynamic_tools=True", "lists catalog tools")
    tools = resolved.tools
    for t in (*contributions.tools, *listed):
        tid = t.descriptor.id
        if tid in tools:
            owner = resolved.tool_owner.get(tid, "the agent's tool_ids")
            raise AgentConfigError(
                f"agent {agent_id!r}: plugin {pid!r} contributes tool {tid!r}, which "
                f"{owner!r} already provides; tool ids must be unique"
            )
        tools[tid] = t
        resolved.tool_owner[tid] = pid
    resolved.bounds[pid] = manifest.bound
    for point in PhaseHookPoint:
        for hook in contributions.hooks_at(point):
            resolved.hooks.setdefault(point, []).append((pid, hook))
    resolved.gates.extend((pid, g) for g in contributions.tool_gates)
    resolved.observers.extend((pid, o) for o in contributions.tool_observers)
    resolved.guards.extend((pid, g) for g in contributions.run_end_guards)
    resolved.dynamic_tools.extend((pid, d) for d in contributions.dynamic_tools)
    resolved.stop_conditions.extend((pid, h) for h in contributions.stop_conditions)
    if contributions.inherit:
        resolved.inherited.add(pid)
        resolved.inherited_gates.extend((pid, g) for g in contributions.tool_gates)
    for table, given in (
        (resolved.effect_handlers, contributions.effect_handlers),
        (resolved.action_handlers, contributions.action_handlers),
    ):
        for name, handler in given.items():
            if name in table:
                raise AgentConfigError(
                    f"agent {agent_id!r}: plugins {table[name][0]!r} and {pid!r} both "
                    f"handle {name!r}; a name has exactly one handler"
                )
            table[name] = (pid, handler)  # type: ignore[assignment]


def _add_delegation(
    tools: dict[str, Tool], agent_id: str, delegates: list[str], delegation_tool_id: str
) -> None:
    """The delegation tool of an agent with delegates, under ``delegation_tool_id``."""
    from ..delegation._tool import DelegationTool  # agents without delegates never load it

    if delegation_tool_id in tools:
        raise AgentConfigError(
            f"agent {agent_id!r} has delegates, so {delegation_tool_id!r} is its delegation "
            f"tool; remove the tool of that id from tool_ids or plugins"
        )
    tools[delegation_tool_id] = DelegationTool(delegates, delegation_tool_id)


def _snapshot(**fields: Any) -> ExecutableAgentSnapshot:
    """The snapshot of validated parts, without building its validator when it would
    change nothing: given instances of its field types, validation keeps each as it is
    (``plugins`` are always ``ResolvedPlugin``s built here). Anything else validates."""
    if (
        isinstance(fields["config"], AgentConfig)
        and isinstance(fields["model"], ModelSpec)
        and all(isinstance(d, ToolDescriptor) for d in fields["tools"])
    ):
        return ExecutableAgentSnapshot.model_construct(**fields)
    return ExecutableAgentSnapshot(**fields)
