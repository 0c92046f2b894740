"""Agents the server offers: agent files, configs published to the store, one runtime.

Agent files use the ``awaken run`` format (the agent at the top level or under
``[agent]``, plus ``[[models]]``, tools and plugins by import path); their
loading is the runtime's own (``_agent_files``). Configs
published through the API land in the store's ``ConfigRegistry`` and override
the file of the same id. The runtime's registries are frozen at build, so a
publish builds a new runtime over the same store; runs in flight keep theirs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentConfigError,
    AgentRuntimeBuilder,
    LiteLLMExecutor,
    ModelSpec,
    Runtime,
    ScriptedExecutor,
    ThreadStore,
)
from awaken_runtime.stores import ConfigNotFound, ConfigRegistry

from ._agent_files import load_agents

__all__ = ["AgentCatalog", "SetupHook", "load_agent_files", "load_setup"]

SetupHook = Callable[[AgentRuntimeBuilder], None]
"""``--setup module:function``: adds tools, providers or plugins before the build."""


def _echo(request: Any) -> str:
    # `awaken run`'s offline echo model, the same here (the one place this package
    # reaches into awaken_runtime's private modules).
    from awaken_runtime.cli._main import _echo as echo

    return echo(request)


def load_agent_files(
    source: str | Path | None,
) -> tuple[list[AgentConfig], list[dict[str, Any]]]:
    """Agent configs and model entries of a file, or of every agent file in a folder.

    Kept for embedding code written against it; tools and plugins the files name by
    import path are only registered through :meth:`AgentCatalog.from_files`.
    """
    parts = load_agents(source)
    return parts.configs, [spec.model_dump() for spec in parts.models]


def load_setup(spec: str) -> SetupHook:
    """Import ``module:function`` for ``--setup``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentConfigError(f"--setup {spec!r}: write MODULE:FUNCTION (e.g. myapp.awaken:setup)")
    try:
        hook = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise AgentConfigError(f"--setup {spec!r}: {exc}") from None
    if not callable(hook):
        raise AgentConfigError(f"--setup {spec!r} is not callable")
    return hook  # type: ignore[no-any-return]


@dataclass
class AgentCatalog:
    """The agent files plus published configs, and the runtime built from both."""

    files: list[AgentConfig]
    models: Sequence[dict[str, Any] | ModelSpec] = field(default_factory=list)
    setup: SetupHook | None = None
    tools: list[Any] = field(default_factory=list)
    """Tools the agent files name by import path (registered before ``setup`` runs)."""
    plugins: list[Any] = field(default_factory=list)
    """Plugins the agent files name by import path."""
    published: dict[str, int] = field(default_factory=dict)
    """Agent id -> the published version in use (absent: the agent file)."""
    configs: dict[str, AgentConfig] = field(default_factory=dict)

    @classmethod
    def from_files(cls, source: str | Path | None, setup: SetupHook | None = None) -> AgentCatalog:
        """The agents of an agent file or folder, loaded as ``awaken run`` loads them
        (models, and tools and plugins named by import path, merged across files)."""
        parts = load_agents(source)
        return cls(
            files=parts.configs,
            models=list(parts.models),
            setup=setup,
            tools=parts.tools,
            plugins=parts.plugins,
        )

    def providers(self) -> set[str]:
        """The provider ids the catalog's models name."""
        return {self._spec(spec).provider for spec in self.models}

    @staticmethod
    def _spec(spec: dict[str, Any] | ModelSpec) -> ModelSpec:
        return spec if isinstance(spec, ModelSpec) else ModelSpec.model_validate(spec)

    def build(self, store: ThreadStore) -> Runtime:
        """A runtime over ``store`` with every current agent config."""
        builder = AgentRuntimeBuilder().with_store(store)
        for spec in self.models:
            builder.with_model(self._spec(spec))
        for tool in self.tools:
            builder.with_tool(tool)
        for plugin in self.plugins:
            builder.with_plugin(plugin)
        builder.with_provider("litellm", LiteLLMExecutor())
        # The offline provider `awaken run` has too, so an agent file can be tried keyless.
        builder.with_provider("echo", ScriptedExecutor([_echo], repeat=True, chunk_size=8))
        if self.setup is not None:
            self.setup(builder)
        merged = {c.id: c for c in self.files}
        merged.update(self.configs)
        for config in merged.values():
            builder.with_agent_spec(config)
        runtime = builder.build()
        for agent_id in merged:
            runtime.resolve(agent_id)  # fail at start (or publish), not at the first request
        return runtime

    def version_of(self, agent_id: str) -> int | None:
        """The published version an agent runs with, ``None`` for the agent file."""
        return self.published.get(agent_id)

    def agent_ids(self) -> list[str]:
        """Every agent id, sorted."""
        return sorted({c.id for c in self.files} | set(self.configs))

    def config(self, agent_id: str) -> AgentConfig | None:
        """The config an agent runs with."""
        if agent_id in self.configs:
            return self.configs[agent_id]
        return next((c for c in self.files if c.id == agent_id), None)

    async def load_published(self, registry: ConfigRegistry, published: set[str]) -> None:
        """Take the newest version of every file agent and ``published`` id from the store."""
        for agent_id in {c.id for c in self.files} | published:
            try:
                latest = await registry.get_config(agent_id)
            except ConfigNotFound:
                continue
            self.use(latest.agent_id, latest.version, latest.config)

    def use(self, agent_id: str, version: int, config: dict[str, Any]) -> None:
        """Run ``agent_id`` with a published config from now on."""
        self.configs[agent_id] = AgentConfig.from_dict(config, source=f"{agent_id} v{version}")
        self.published[agent_id] = version
