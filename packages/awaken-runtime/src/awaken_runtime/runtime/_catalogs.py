"""Tools that ``ToolCatalog`` plugins list before a run (e.g. the tools of MCP servers).

Resolution stays a pure function of (registries, agent id, listed tools): the
runtime asks each catalog plugin an agent enables for its tools, and when the
listing differs from the one the cached resolution used, the agent is
resolved again, so its snapshot and fingerprint follow the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..agents._resolve import Registries, _validate_plugin_config
from ..plugins._plugin import ToolCatalog
from ..tools._tool import Tool

__all__ = ["Catalogs"]

_NONE: dict[str, Sequence[Tool]] = {}


class Catalogs:
    """The latest listing per agent, and which agents have catalog plugins at all."""

    def __init__(self, registries: Registries, owner: object) -> None:
        self._registries = registries
        self._owner = owner
        self._plugins: dict[str, list[tuple[str, ToolCatalog, Any]]] = {}
        self._listed: dict[str, dict[str, Sequence[Tool]]] = {}
        self._keys: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}

    def _catalog_plugins(self, agent_id: str) -> list[tuple[str, ToolCatalog, Any]]:
        found = self._plugins.get(agent_id)
        if found is None:
            found = []
            config = self._registries.agents.get(agent_id)
            # Unknown agents and plugins are left to resolution, which names them.
            for pid in config.plugin_ids if config is not None else ():
                plugin = self._registries.plugins.get(pid)
                if isinstance(plugin, ToolCatalog):
                    raw = config.plugin_config.get(pid, {}) if config is not None else {}
                    found.append((pid, plugin, _validate_plugin_config(agent_id, plugin, raw)))
            self._plugins[agent_id] = found
        return found

    async def refresh(self, agent_id: str) -> bool:
        """List the agent's catalog tools now; whether they differ from the last listing."""
        plugins = self._catalog_plugins(agent_id)
        if not plugins:
            return False
        listed: dict[str, Sequence[Tool]] = {
            pid: list(await p.catalog(cfg, self._owner)) for pid, p, cfg in plugins
        }
        key = tuple(
            (pid, tuple(t.descriptor.content_hash for t in tools)) for pid, tools in listed.items()
        )
        if self._keys.get(agent_id) == key:
            return False
        self._keys[agent_id] = key
        self._listed[agent_id] = listed
        return True

    def listed(self, agent_id: str) -> dict[str, Sequence[Tool]]:
        """The tools of the agent's last listing (none before the first)."""
        return self._listed.get(agent_id, _NONE)

    async def aclose(self) -> None:
        """Let every catalog plugin of the registries release what it holds for the owner."""
        for plugin in self._registries.plugins.values():
            if isinstance(plugin, ToolCatalog):
                await plugin.release(self._owner)
