"""``Runtime``: resolve agents and run them; ``AgentRuntimeBuilder`` to make one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ._cancel import CancellationToken
from ._config import AgentConfig
from ._discovery import Discovery, discover
from ._errors import AgentConfigError, DuplicateIdError
from ._events import AgentEvent, RunFinish
from ._function_tool import FunctionTool
from ._loop import AgentLoop
from ._messages import Message, new_id
from ._models import LlmExecutor, ModelSpec
from ._plugin import Plugin
from ._resolve import ExecutableAgentSnapshot, Registries, ResolvedAgent, resolve_agent
from ._run_state import RunState
from ._thread_store import InMemoryStore, ScopeBinding, ThreadStore
from ._tools import Tool

__all__ = ["AgentRuntimeBuilder", "RunInput", "Runtime"]

RunInput = str | Message | Sequence[Message]
"""A run's input: a user text, one message, or several messages."""


def _input_messages(value: RunInput) -> list[Message]:
    if isinstance(value, str):
        return [Message.user(value)]
    if isinstance(value, Message):
        return [value]
    return list(value)


class Runtime:
    """Resolves agents against fixed registries and runs them over threads.

    Build one with :class:`AgentRuntimeBuilder`. Resolution is cached per
    agent id (the registries never change after ``build``), so a run pays
    only for the loop.
    """

    def __init__(
        self,
        registries: Registries,
        *,
        store: ThreadStore | None = None,
        discovery: Discovery | None = None,
    ) -> None:
        self.registries = registries
        self.store: ThreadStore = store if store is not None else InMemoryStore()
        self.discovery = discovery
        self._resolved: dict[str, ResolvedAgent] = {}

    def resolve(self, agent_id: str) -> ExecutableAgentSnapshot:
        """The serializable snapshot of ``agent_id`` (raises on unknown ids or bad config)."""
        return self._agent(agent_id).snapshot

    def _agent(self, agent: str | ExecutableAgentSnapshot) -> ResolvedAgent:
        if isinstance(agent, ExecutableAgentSnapshot):
            resolved = self._agent(agent.config.id)
            if resolved.snapshot.fingerprint != agent.fingerprint:
                raise AgentConfigError(
                    f"snapshot of agent {agent.config.id!r} has fingerprint "
                    f"{agent.fingerprint[:12]}…, but the registries now resolve it to "
                    f"{resolved.snapshot.fingerprint[:12]}…; resolve the agent again"
                )
            return resolved
        found = self._resolved.get(agent)
        if found is None:
            found = resolve_agent(self.registries, agent)
            self._resolved[agent] = found
        return found

    def _loop(
        self,
        agent: str | ExecutableAgentSnapshot,
        *,
        thread_id: str | None,
        run_id: str | None,
        profile_id: str,
        namespace: str,
        cancel: CancellationToken | None,
        emit: Callable[[AgentEvent], None] | None,
    ) -> AgentLoop:
        resolved = self._agent(agent)
        binding = ScopeBinding(thread_id or new_id("thread_"), profile_id, namespace)
        loop = AgentLoop(
            resolved, self.store, binding, run_id or new_id("run_"), cancel=cancel, emit=emit
        )
        for plugin_id, source in resolved.dynamic_tools:
            for extra in source():
                tid = extra.descriptor.id
                if tid in loop.tools:
                    raise AgentConfigError(
                        f"plugin {plugin_id!r} supplies dynamic tool {tid!r}, which the agent "
                        f"already has; dynamic tool ids must be unique"
                    )
                loop.tools[tid] = extra
                loop.tool_owner[tid] = plugin_id
        if resolved.dynamic_tools:
            loop.refresh_descriptors()
        return loop

    async def run(
        self,
        agent: str | ExecutableAgentSnapshot,
        input: RunInput,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        profile_id: str = "default",
        namespace: str = "default",
        cancel: CancellationToken | None = None,
        on_event: Callable[[AgentEvent], None] | None = None,
    ) -> RunState:
        """Run ``agent`` on ``input`` in ``thread_id`` (a new thread if omitted).

        ``profile_id`` binds PROFILE-scope state, ``namespace`` SHARED-scope
        state. ``on_event`` receives every :data:`AgentEvent` as it happens.
        """
        loop = self._loop(
            agent,
            thread_id=thread_id,
            run_id=run_id,
            profile_id=profile_id,
            namespace=namespace,
            cancel=cancel,
            emit=on_event,
        )
        return await loop.run(_input_messages(input))

    async def stream(
        self,
        agent: str | ExecutableAgentSnapshot,
        input: RunInput,
        **kwargs: Any,
    ) -> AsyncIterator[AgentEvent]:
        """Run like :meth:`run` and yield its events; the last one is ``RunFinish``."""
        queue: asyncio.Queue[AgentEvent | BaseException] = asyncio.Queue()
        task = asyncio.ensure_future(self.run(agent, input, on_event=queue.put_nowait, **kwargs))
        task.add_done_callback(
            lambda t: queue.put_nowait(t.exception() or _DONE) if not t.cancelled() else None
        )
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    if item is _DONE:
                        return
                    raise item
                yield item
                if isinstance(item, RunFinish):
                    await task
                    return
        finally:
            if not task.done():
                task.cancel()

    def run_sync(
        self, agent: str | ExecutableAgentSnapshot, input: RunInput, **kwargs: Any
    ) -> RunState:
        """Blocking :meth:`run` for scripts and notebooks without a running event loop."""
        return asyncio.run(self.run(agent, input, **kwargs))


class _Done(Exception):
    pass


_DONE = _Done()


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

    @staticmethod
    def _put(table: dict[str, Any], kind: str, item_id: str, value: Any) -> None:
        if item_id in table:
            raise DuplicateIdError(kind, item_id, "the builder", "the builder")
        table[item_id] = value

    def with_agent_spec(
        self, spec: AgentConfig | dict[str, Any] | str | Path
    ) -> AgentRuntimeBuilder:
        """Register an agent from a config object, a dict, or a TOML/JSON/YAML file path."""
        if isinstance(spec, (str, Path)):
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

    def build(self) -> Runtime:
        """Freeze the registries (merging discovered items) and return a :class:`Runtime`."""
        reg = Registries(
            agents=dict(self._reg.agents),
            tools=dict(self._reg.tools),
            models=dict(self._reg.models),
            providers=dict(self._reg.providers),
            plugins=dict(self._reg.plugins),
        )
        found: Discovery | None = None
        if self._discover:
            found = discover()
            for kind in ("plugins", "tools", "providers"):
                table = getattr(reg, kind)
                for item_id, item in getattr(found, kind).items():
                    table.setdefault(item_id, item.value)
            for (kind, item_id), err in found.duplicates.items():
                if kind == "plugins" and item_id not in reg.plugins:
                    reg.unavailable_plugins[item_id] = err
            for failure in found.failures:
                for name in (failure.source, failure.distribution):
                    if name and name not in reg.plugins:
                        reg.unavailable_plugins.setdefault(name, failure)
        return Runtime(reg, store=self._store, discovery=found)
