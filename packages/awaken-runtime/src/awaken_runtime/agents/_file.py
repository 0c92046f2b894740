"""Agent files: one agent, the models it runs on, and Python tools/plugins by import path.

The format (every key) is documented in the awaken-runtime README, section
"Agent files"; ``tests/runtime/agents/test_file.py`` checks that section names
every field.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._errors import AgentConfigError
from ..models._model import ModelSpec
from ..plugins._plugin import Plugin
from ..tools._tool import Tool
from ._config import AgentConfig
from ._imports import import_output, import_plugin, import_tool, is_import_path

__all__ = ["AgentFile"]

_FILE_KEYS = ("agent", "models")


def _parse(p: Path, text: str) -> Any:
    suffix = p.suffix.lower()
    if suffix == ".toml":
        import tomllib

        return tomllib.loads(text)
    if suffix == ".json":
        return json.loads(text)
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise AgentConfigError(
                f"reading {str(p)!r} needs PyYAML: pip install 'awaken-runtime[yaml]'"
            ) from None
        return yaml.safe_load(text)
    raise AgentConfigError(
        f"agent file {str(p)!r} has unknown extension {suffix!r}; use .toml, .json, .yaml or .yml"
    )


def read_agent_data(path: str | Path) -> dict[str, Any]:
    """The top-level table of a ``.toml``, ``.json``, ``.yaml`` or ``.yml`` agent file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise AgentConfigError(f"cannot read agent file {str(p)!r}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise AgentConfigError(
            f"cannot read agent file {str(p)!r}: not UTF-8 text ({exc.reason} at byte "
            f"{exc.start}); save it as UTF-8"
        ) from None
    try:
        data = _parse(p, text)
    except AgentConfigError:
        raise
    except Exception as exc:  # every parser has its own error type
        raise AgentConfigError(f"cannot parse agent file {str(p)!r}: {exc}") from None
    if not isinstance(data, dict):
        raise AgentConfigError(f"agent file {str(p)!r} must hold a table/object at the top")
    return data


def _split(data: dict[str, Any], source: str) -> tuple[dict[str, Any], Any]:
    """The agent's own table and the ``models`` list, from either layout."""
    models = data.get("models", [])
    if "agent" not in data:
        return {k: v for k, v in data.items() if k != "models"}, models
    agent = data["agent"]
    if not isinstance(agent, dict):
        raise AgentConfigError(f"invalid {source}: agent: must be a table/object")
    stray = sorted(k for k in data if k not in _FILE_KEYS)
    if stray:
        raise AgentConfigError(
            f"invalid {source}: top-level keys {', '.join(map(repr, stray))} next to [agent]; "
            f"move them into [agent] (the top level holds only 'agent' and 'models')"
        )
    return dict(agent), models


def _models(raw: Any, source: str) -> tuple[ModelSpec, ...]:
    if not isinstance(raw, list):
        raise AgentConfigError(f"invalid {source}: models: must be a list of tables ([[models]])")
    specs = []
    known = set(ModelSpec.model_fields)
    for i, entry in enumerate(raw):
        # ModelSpec itself ignores unknown keys; in a file they are typos worth naming.
        stray = sorted(set(entry) - known) if isinstance(entry, dict) else []
        if stray:
            raise AgentConfigError(
                f"invalid {source}: models[{i}].{stray[0]}: unknown key; a model takes "
                f"{', '.join(sorted(known))}"
            )
        try:
            specs.append(ModelSpec.model_validate(entry))
        except ValidationError as exc:
            problems = "; ".join(
                f"models[{i}].{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                if err["loc"]
                else f"models[{i}]: {err['msg']}"
                for err in exc.errors()
            )
            raise AgentConfigError(f"invalid {source}: {problems}") from None
    return tuple(specs)


def _ids(agent: dict[str, Any], key: str) -> list[Any]:
    value = agent.get(key, [])
    return list(value) if isinstance(value, list) else []


@dataclass(frozen=True)
class AgentFile:
    """A loaded agent file: the agent, its ``[[models]]``, and imported tools and plugins.

    ``tool_ids`` and ``plugin_ids`` entries written ``"module:attribute"`` are
    imported (the agent file's folder is put on ``sys.path`` first) and replaced
    in ``config`` by the tool's or plugin's id; register ``tools``, ``plugins``
    and ``models`` with the builder next to ``config`` (``awaken run`` does).
    """

    path: Path
    config: AgentConfig
    models: tuple[ModelSpec, ...] = ()
    tools: tuple[Tool, ...] = ()
    plugins: tuple[Plugin, ...] = ()
    imported: dict[str, str] = field(default_factory=dict)
    """Each import path of the file and the id it was registered under."""

    def register_parts(self, builder: Any) -> Any:
        """Add the file's models, imported tools and plugins to an ``AgentRuntimeBuilder``
        (not the agent itself: ``builder.with_agent_spec(self.config)`` adds it, after any
        change the caller makes); returns the builder."""
        for spec in self.models:
            builder.with_model(spec)
        for found_tool in self.tools:
            builder.with_tool(found_tool)
        for plugin in self.plugins:
            builder.with_plugin(plugin)
        return builder

    @classmethod
    def load(cls, path: str | Path) -> AgentFile:
        """Read, validate and import everything ``path`` names; errors name the key and fix."""
        p = Path(path)
        source = f"agent file {str(p)!r}"
        agent, raw_models = _split(read_agent_data(p), source)
        models = _models(raw_models, source)
        refs = [r for key in ("tool_ids", "plugin_ids") for r in _ids(agent, key)]
        output = agent.get("output")
        # `output = "myapp.types:City"`, or a table with `type = "myapp.types:City"`.
        typed = output if isinstance(output, str) else None
        if isinstance(output, dict) and isinstance(output.get("type"), str):
            typed = output["type"]
        if typed is not None:
            refs.append(typed)
        tools: list[Tool] = []
        plugins: list[Plugin] = []
        imported: dict[str, str] = {}
        if any(isinstance(r, str) and is_import_path(r) for r in refs):
            folder = str(p.resolve().parent)
            if folder not in sys.path:
                # Like uvicorn's --app-dir: modules next to the file import by their name.
                sys.path.insert(0, folder)
            for ref in _ids(agent, "tool_ids"):
                if isinstance(ref, str) and is_import_path(ref) and ref not in imported:
                    found_tool = import_tool(ref, source=source)
                    tools.append(found_tool)
                    imported[ref] = found_tool.descriptor.id
            for ref in _ids(agent, "plugin_ids"):
                if isinstance(ref, str) and is_import_path(ref) and ref not in imported:
                    found_plugin = import_plugin(ref, source=source)
                    plugins.append(found_plugin)
                    imported[ref] = found_plugin.manifest.id
            for key in ("tool_ids", "plugin_ids"):
                if isinstance(agent.get(key), list):
                    agent[key] = [
                        imported.get(r, r) if isinstance(r, str) else r for r in agent[key]
                    ]
            if typed is not None:
                table = output if isinstance(output, dict) else {}
                options = {k: v for k, v in table.items() if k != "type"}
                agent["output"] = import_output(typed, options, source=source)
            if isinstance(agent.get("plugin_config"), dict):
                # A plugin's config table may be keyed by its import path or by its id.
                agent["plugin_config"] = {
                    imported.get(k, k): v for k, v in agent["plugin_config"].items()
                }
        config = AgentConfig.from_dict(agent, source=source)
        return cls(p, config, models, tuple(tools), tuple(plugins), imported)
