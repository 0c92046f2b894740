"""Agent files, read exactly as ``awaken run`` reads them, merged across a folder.

Each file goes through the runtime's own ``AgentFile.load``: its ``[[models]]``,
and the tools and plugins its ``tool_ids``/``plugin_ids`` name by import path
(``"myapp.tools:shell"``), come with it. A folder's files are merged: the same
model, tool or plugin declared by two files is registered once when the two
are identical, and refused naming both files when they differ.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awaken_runtime import AgentConfig, AgentConfigError, AgentFile, ModelSpec

__all__ = ["AGENT_SUFFIXES", "AgentParts", "agent_paths", "load_agents"]

AGENT_SUFFIXES = (".toml", ".json", ".yaml", ".yml")


@dataclass
class AgentParts:
    """What a set of agent files holds, merged: agents, models, imported tools and plugins."""

    configs: list[AgentConfig] = field(default_factory=list)
    models: list[ModelSpec] = field(default_factory=list)
    """Every file's ``[[models]]``, each id once."""
    tools: list[Any] = field(default_factory=list)
    """Tools named by import path in ``tool_ids``."""
    plugins: list[Any] = field(default_factory=list)


def agent_paths(source: str | Path) -> list[Path]:
    """The agent file ``source``, or every agent file in the folder ``source``, sorted."""
    root = Path(source)
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.suffix.lower() in AGENT_SUFFIXES)
        if not files:
            raise AgentConfigError(
                f"--agents {str(root)!r} holds no agent file (.toml, .json, .yaml, .yml)"
            )
        return files
    if root.is_file():
        return [root]
    raise AgentConfigError(f"--agents {str(root)!r} is neither a file nor a folder")


class _Merge:
    """One kind of part by id: the first file to declare each, checked against the rest."""

    def __init__(self, kind: str, fix: str) -> None:
        self.kind, self.fix = kind, fix
        self.seen: dict[str, tuple[Any, Path]] = {}

    def add(self, part_id: str, part: Any, path: Path, out: list[Any]) -> None:
        if part_id not in self.seen:
            self.seen[part_id] = (part, path)
            out.append(part)
            return
        first, where = self.seen[part_id]
        if first is part or first == part:
            return  # the same part declared twice: registered once
        raise AgentConfigError(
            f"{self.kind} {part_id!r} is declared differently by {str(where)!r} and "
            f"{str(path)!r}; {self.fix}"
        )


def load_agents(source: str | Path | None) -> AgentParts:
    """Load and merge the agent files of ``source`` (``None``: none)."""
    parts = AgentParts()
    if source is None:
        return parts
    if os.getcwd() not in sys.path:
        # As `awaken run`: a console script's sys.path starts at its bin/ folder.
        sys.path.insert(0, os.getcwd())
    agents = _Merge("agent", "give each agent its own id")
    models = _Merge("model", "declare it once, or give each its own id")
    tools = _Merge("tool", "import one tool per id")
    plugins = _Merge("plugin", "import one plugin per id")
    for path in agent_paths(source):
        loaded = AgentFile.load(path)
        if loaded.config.id in agents.seen:
            _, where = agents.seen[loaded.config.id]
            raise AgentConfigError(
                f"agent id {loaded.config.id!r} is defined by both {str(where)!r} and "
                f"{str(path)!r}; give each agent its own id"
            )
        agents.add(loaded.config.id, loaded.config, path, parts.configs)
        for spec in loaded.models:
            models.add(spec.id, spec, path, parts.models)
        for tool in loaded.tools:
            tools.add(tool.descriptor.id, tool, path, parts.tools)
        for plugin in loaded.plugins:
            plugins.add(plugin.manifest.id, plugin, path, parts.plugins)
    return parts
