"""Agents the server offers: agent files, configs published to the store, one runtime.

Agent files use the ``awaken run`` format (the agent at the top level or under
``[agent]``, plus ``[[models]]``); their loading is the runtime's own. Configs
published through the API land in the store's ``ConfigRegistry`` and override
the file of the same id. The runtime's registries are frozen at build, so a
publish builds a new runtime over the same store; runs in flight keep theirs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
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

__all__ = ["AgentCatalog", "SetupHook", "load_agent_files", "load_setup"]

SetupHook = Callable[[AgentRuntimeBuilder], None]
"""``--setup module:function``: adds tools, providers or plugins before the build."""

AGENT_SUFFIXES = (".toml", ".json", ".yaml", ".yml")


def _models_in_file(path: Path) -> list[dict[str, Any]]:
    # The `awaken run` loader's private helper: one of the two places this package
    # reaches into awaken_runtime's private modules (so both commands read files alike).
    from awaken_runtime.cli._main import _models_in_file as read_models

    return read_models(str(path))


def _echo(request: Any) -> str:
    # The other place: `awaken run`'s offline echo model, the same here.
    from awaken_runtime.cli._main import _echo as echo

    return echo(request)


def load_agent_files(
    source: str | Path | None,
) -> tuple[list[AgentConfig], list[dict[str, Any]]]:
    """Agent configs and model entries of a file, or of every agent file in a folder."""
    if source is None:
        return [], []
    root = Path(source)
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.suffix.lower() in AGENT_SUFFIXES)
        if not files:
            raise AgentConfigError(
                f"--agents {str(root)!r} holds no agent file (.toml, .json, .yaml, .yml)"
            )
    elif root.is_file():
        files = [root]
    else:
        raise AgentConfigError(f"--agents {str(root)!r} is neither a file nor a folder")
    configs: list[AgentConfig] = []
    models: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    for path in files:
        config = AgentConfig.from_file(path)
        if config.id in seen:
            raise AgentConfigError(
                f"agent id {config.id!r} is defined by both {str(seen[config.id])!r} and "
                f"{str(path)!r}; give each agent its own id"
            )
        seen[config.id] = path
        configs.append(config)
        models.extend(_models_in_file(path))
    return configs, models


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
    models: list[dict[str, Any]] = field(default_factory=list)
    setup: SetupHook | None = None
    published: dict[str, int] = field(default_factory=dict)
    """Agent id -> the published version in use (absent: the agent file)."""
    configs: dict[str, AgentConfig] = field(default_factory=dict)

    def build(self, store: ThreadStore) -> Runtime:
        """A runtime over ``store`` with every current agent config."""
        builder = AgentRuntimeBuilder().with_store(store)
        for spec in self.models:
            builder.with_model(ModelSpec.model_validate(spec))
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
