"""Shared factories for the awaken_runtime tests.

Test modules run under ``--import-mode=importlib`` and cannot import this file,
so every helper is handed out through a fixture:

* ``model_spec``: a :class:`ModelSpec` (provider ``scripted``) with pricing.
* ``agent_config``: ``agent_config(id="agent", **fields) -> AgentConfig``.
* ``make_plugin``: ``make_plugin(id, bound, contributions, config_model=...)``,
  a fresh plugin object; ``contributions`` is a :class:`Contributions` or a
  function ``config -> Contributions``.
* ``make_runtime``: ``make_runtime(turns, tools=..., plugins=..., **agent_fields)``
  builds a discovery-free runtime around a :class:`ScriptedExecutor` and one
  agent; it returns a :class:`Rig` (runtime, executor, store, ``await rig.run()``).
* ``hook`` / ``reaction``: shortcuts for phase hooks that return commands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from awaken_runtime import (
    AgentConfig,
    CapabilityBound,
    Command,
    Contributions,
    HookReaction,
    Message,
    ModelSpec,
    PhaseContext,
    PluginManifest,
    Pricing,
    ScriptedTurn,
)
from awaken_runtime.testing import ScriptedRig, scripted_runtime

MODEL_ID = "test-model"
PROVIDER_ID = "scripted"
AGENT_ID = "agent"
INSTRUCTIONS = "You are a test agent."
PRICING = Pricing(input_per_mtok=3.0, output_per_mtok=15.0)


def build_model_spec(**overrides: Any) -> ModelSpec:
    """The test model: provider ``scripted``, priced so cost paths run."""
    fields: dict[str, Any] = {
        "id": MODEL_ID,
        "provider": PROVIDER_ID,
        "model": "scripted-1",
        "context_window": 8192,
        "pricing": PRICING,
    }
    fields.update(overrides)
    return ModelSpec(**fields)


def build_agent_config(id: str = AGENT_ID, **fields: Any) -> AgentConfig:
    """An agent bound to the test model; keyword arguments override any field."""
    data: dict[str, Any] = {"id": id, "instructions": INSTRUCTIONS, "model_binding": MODEL_ID}
    data.update(fields)
    return AgentConfig(**data)


ContributionSource = Contributions | Callable[[Any], Contributions] | None


def build_plugin(
    plugin_id: str,
    bound: CapabilityBound | dict[str, Any] | None = None,
    contributions: ContributionSource = None,
    *,
    config_model: type[BaseModel] | None = None,
    version: str = "1.0.0",
    description: str = "",
) -> Any:
    """A fresh plugin object (its own class) with the given bound and contributions.

    The object records every config ``resolve`` received in ``.configs``.
    """
    if isinstance(bound, dict):
        bound = CapabilityBound(**bound)
    manifest = PluginManifest(
        id=plugin_id,
        version=version,
        description=description,
        config_model=config_model,
        bound=bound or CapabilityBound(),
    )

    class _TestPlugin:
        def __init__(self) -> None:
            self.manifest = manifest
            self.configs: list[Any] = []

        def resolve(self, config: Any) -> Contributions:
            self.configs.append(config)
            if contributions is None:
                return Contributions()
            if callable(contributions) and not isinstance(contributions, Contributions):
                return contributions(config)
            return contributions

        def __repr__(self) -> str:
            return f"<test plugin {plugin_id!r}>"

    _TestPlugin.__name__ = f"Plugin_{plugin_id.replace('-', '_')}"
    return _TestPlugin()


def reaction(*commands: Command, messages: Sequence[Message] = (), stop: str | None = None):
    """A :class:`HookReaction` with ``commands``."""
    return HookReaction(commands=list(commands), messages=list(messages), stop=stop)


def make_hook(
    fn: Callable[[PhaseContext], Iterable[Command] | HookReaction | None],
):
    """An async phase hook from a sync function returning commands or a reaction."""

    async def hook(ctx: PhaseContext) -> HookReaction | None:
        result = fn(ctx)
        if result is None or isinstance(result, HookReaction):
            return result
        return HookReaction(commands=list(result))

    return hook


Rig = ScriptedRig


def build_rig(
    turns: Sequence[ScriptedTurn | str | Callable[..., Any]] = ("done",),
    *,
    model: ModelSpec | None = None,
    **kwargs: Any,
) -> Rig:
    """The library's ``scripted_runtime`` with the test model (priced) and instructions.

    Without ``agents``, the agent ``"agent"`` gets every registered tool and
    plugin (``tool_ids``/``plugin_ids`` override that).
    """
    if kwargs.get("agents") is None:
        kwargs.setdefault("instructions", INSTRUCTIONS)
    return scripted_runtime(turns, model=model or build_model_spec(), **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: builds a venv or otherwise takes seconds")


@pytest.fixture
def model_spec() -> ModelSpec:
    return build_model_spec()


@pytest.fixture
def agent_config() -> Callable[..., AgentConfig]:
    return build_agent_config


@pytest.fixture
def make_plugin() -> Callable[..., Any]:
    return build_plugin


@pytest.fixture
def make_runtime() -> Callable[..., Rig]:
    return build_rig


@pytest.fixture
def hook() -> Callable[..., Any]:
    return make_hook


@pytest.fixture
def rx() -> Callable[..., HookReaction]:
    """``rx(*commands, messages=..., stop=...)``: a HookReaction."""
    return reaction


class InstalledDists:
    """Fake installed distributions: ``*.dist-info`` folders and modules on ``sys.path``.

    ``importlib.metadata`` sees them like pip-installed ones; ``scan()``
    re-runs discovery. The fixture undoes ``sys.path`` and rescans afterwards.
    """

    def __init__(self, root: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.modules: list[str] = []
        root.mkdir(parents=True, exist_ok=True)
        monkeypatch.syspath_prepend(str(root))
        monkeypatch.delenv("AWAKEN_DISABLE_PLUGINS", raising=False)

    def add(self, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
        import importlib
        import textwrap

        info = self.root / f"{dist.replace('-', '_')}-1.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0.0\n")
        lines = ["[awaken]", *(f"{name} = {target}" for name, target in entry_points.items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        for module, source in modules.items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source))
            self.modules.append(module)
        importlib.invalidate_caches()

    def scan(self) -> Any:
        import awaken_runtime

        return awaken_runtime.discover(refresh=True)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """``installed.add(dist, {entry point: target}, {module: source})``, then ``scan()``."""
    import importlib
    import sys

    import awaken_runtime

    dists = InstalledDists(tmp_path / "site", monkeypatch)
    yield dists
    monkeypatch.undo()
    for module in dists.modules:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()
    awaken_runtime.discover(refresh=True)
