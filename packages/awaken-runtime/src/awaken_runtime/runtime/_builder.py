"""``AgentRuntimeBuilder``: accumulate the registries and build a ``Runtime``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._errors import DuplicateIdError
from ..agents._config import AgentConfig
from ..agents._resolve import Registries
from ..delegation._service import (
    MAX_DELEGATION_DEPTH,
    MAX_DESCENDANTS,
    NativeDelegationService,
    RunDelegationService,
)
from ..models._model import LlmExecutor, ModelSpec
from ..plugins._plugin import Plugin
from ..stores._thread_store import ThreadStore
from ..tools._function_tool import FunctionTool
from ..tools._tool import Tool
from ._runtime import Runtime

if TYPE_CHECKING:
    from pathlib import Path

    from ..lifecycle._observer import RunObserver
    from ..plugins._discovery import Discovery

__all__ = ["AgentRuntimeBuilder"]


class AgentRuntimeBuilder:
    """Accumulates the five registries (agents, tools, models, providers, plugins).

    With ``discover=True`` (the default) plugins, tools and providers that
    installed distributions publish under the ``awaken`` entry-point group are
    added at :meth:`build`; what the builder registers explicitly wins over a
    discovered item with the same id. Installed is not enabled: a discovered
    plugin is active only for agents whose ``plugin_ids`` name it.
    """

    def __init__(self, *, discover: bool = True) -> None:
        self._discover = discover
        self._reg = Registries()
        self._store: ThreadStore | None = None
        self._secret: bytes | None = None
        self._limits: tuple[int, int] | None = None
        self._observer: RunObserver | None = None
        self._progress = False

    @staticmethod
    def _put(table: dict[str, Any], kind: str, item_id: str, value: Any) -> None:
        if item_id in table:
            raise DuplicateIdError(kind, item_id, "the builder", "the builder")
        table[item_id] = value

    def with_agent_spec(
        self, spec: AgentConfig | dict[str, Any] | str | Path
    ) -> AgentRuntimeBuilder:
        """Register an agent from a config object, a dict, or a TOML/JSON/YAML file path."""
        if not isinstance(spec, (AgentConfig, dict)):  # a path (str or PathLike)
            spec = AgentConfig.from_file(spec)
        elif isinstance(spec, dict):
            spec = AgentConfig.from_dict(spec)
        self._put(self._reg.agents, "agent", spec.id, spec)
        return self

    def with_agent_specs(
        self, specs: Iterable[AgentConfig | dict[str, Any] | str | Path]
    ) -> AgentRuntimeBuilder:
        """Register several agents."""
        for spec in specs:
            self.with_agent_spec(spec)
        return self

    def with_tool(self, tool: Tool | Callable[..., Any]) -> AgentRuntimeBuilder:
        """Register a tool (a plain function is wrapped with ``@tool``)."""
        if not isinstance(tool, Tool):
            tool = FunctionTool(tool)
        self._put(self._reg.tools, "tool", tool.descriptor.id, tool)
        return self

    def with_model(self, spec: ModelSpec) -> AgentRuntimeBuilder:
        """Register a model spec under its id."""
        self._put(self._reg.models, "model", spec.id, spec)
        return self

    def with_provider(self, provider_id: str, executor: LlmExecutor) -> AgentRuntimeBuilder:
        """Register a model provider (an :class:`LlmExecutor`)."""
        self._put(self._reg.providers, "provider", provider_id, executor)
        return self

    def with_plugin(self, plugin: Plugin) -> AgentRuntimeBuilder:
        """Register a plugin under its manifest id."""
        if not isinstance(plugin, Plugin):
            raise TypeError(f"{plugin!r} is not a Plugin: it needs a manifest and resolve(config)")
        self._put(self._reg.plugins, "plugin", plugin.manifest.id, plugin)
        return self

    def with_store(self, store: ThreadStore) -> AgentRuntimeBuilder:
        """Use ``store`` for threads (default: a fresh :class:`InMemoryStore`)."""
        self._store = store
        return self

    def with_ticket_secret(self, secret: bytes) -> AgentRuntimeBuilder:
        """Sign resume tickets with HMAC-SHA256 under ``secret``.

        A ticket whose signature does not verify is rejected before any lookup.
        """
        self._secret = secret
        return self

    def with_progress_records(self, enabled: bool = True) -> AgentRuntimeBuilder:
        """Write the run record at every step, so a run whose process died can be
        continued from its last step (``Runtime.continue_run``; the run ingress's
        workers need it). Costs one record write per step."""
        self._progress = enabled
        return self

    def with_delegation_limits(
        self, *, max_depth: int = MAX_DELEGATION_DEPTH, max_descendants: int = MAX_DESCENDANTS
    ) -> AgentRuntimeBuilder:
        """Bound native sub-agents: how deep delegation may nest, and how many sub-agent
        runs (all levels together) one step of a root run may start. A child past either
        limit is refused with a model-visible reason naming the chain (defaults: 10
        levels, 40 runs per root step)."""
        self._limits = (max_depth, max_descendants)
        return self

    def with_remote_delegate(
        self, agent_id: str, service: RunDelegationService
    ) -> AgentRuntimeBuilder:
        """Serve delegate ``agent_id`` through ``service`` (e.g. an A2A peer from
        ``awaken-protocol-a2a``): agents may list it in ``delegates`` as if it were
        local, and ``agent_run`` calls to it go to ``service``; other ids stay native."""
        if not isinstance(service, RunDelegationService):
            raise TypeError(
                f"remote delegate {agent_id!r}: {service!r} is not a RunDelegationService "
                f"(it needs tool_id, supports_parallel, delegate and resume)"
            )
        if agent_id in self._reg.agents:
            raise DuplicateIdError("agent", agent_id, "the builder", "a remote delegate")
        self._put(self._reg.remote_agents, "remote delegate", agent_id, service)
        return self

    def with_observer(self, observer: RunObserver) -> AgentRuntimeBuilder:
        """Report every run leg, inference and tool call to ``observer`` (e.g.
        ``awaken_otel.GenAITelemetry`` for OpenTelemetry traces and metrics)."""
        self._observer = observer
        return self

    def build(self) -> Runtime:
        """Freeze the registries (merging discovered items) and return a :class:`Runtime`."""
        reg = Registries(
            agents=dict(self._reg.agents),
            tools=dict(self._reg.tools),
            models=dict(self._reg.models),
            providers=dict(self._reg.providers),
            plugins=dict(self._reg.plugins),
            remote_agents=dict(self._reg.remote_agents),
        )
        found: Discovery | None = None
        if self._discover:
            from ..plugins._discovery import discover  # entry points: only when asked for

            found = discover()
            for kind in ("plugins", "tools", "providers"):
                table = getattr(reg, kind)
                for item_id, item in getattr(found, kind).items():
                    table.setdefault(item_id, item.value)
            for (kind, item_id), err in found.duplicates.items():
                if item_id not in getattr(reg, kind):
                    getattr(reg, f"unavailable_{kind}")[item_id] = err
            for failure in found.failures:
                for name in (failure.source, failure.distribution):
                    if name and name not in reg.plugins:
                        reg.unavailable_plugins.setdefault(name, failure)
        runtime = Runtime(
            reg,
            store=self._store,
            discovery=found,
            ticket_secret=self._secret,
            observer=self._observer,
        )
        runtime.progress_records = self._progress
        if self._limits is not None:
            depth, descendants = self._limits
            runtime.delegation = NativeDelegationService(
                runtime, max_depth=depth, max_descendants=descendants
            )
        if reg.remote_agents:
            from ..delegation._routed import RoutedDelegationService  # only with remotes

            runtime.delegation = RoutedDelegationService(runtime.delegation, reg.remote_agents)
        return runtime
