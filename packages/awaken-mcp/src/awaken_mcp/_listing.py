"""``awaken mcp list``: the MCP servers agents declare, their status and their tools."""

from __future__ import annotations

from typing import Any

from awaken_runtime import AwakenError, Runtime

from ._config import McpConfig
from ._plugin import PLUGIN_ID, McpPlugin

__all__ = ["list_servers"]


def _target(server: Any) -> str:
    if server.transport == "stdio":
        return " ".join([server.command, *server.args])
    return str(server.url)


async def list_servers(runtime: Runtime, agent_ids: list[str]) -> list[dict[str, Any]]:
    """One entry per (agent, server): transport, target, status, restarts, offered tool ids.

    Listing connects to each server (that is how its status and tools are
    known); an agent whose servers cannot be reached is listed with the error.
    """
    plugin = runtime.registries.plugins.get(PLUGIN_ID)
    if not isinstance(plugin, McpPlugin):
        return []
    rows: list[dict[str, Any]] = []
    for agent_id in agent_ids:
        config = runtime.registries.agents[agent_id]
        if PLUGIN_ID not in config.plugin_ids:
            continue
        error: str | None = None
        tools: dict[str, list[str]] = {}
        try:
            snapshot = await runtime.aresolve(agent_id)
        except AwakenError as exc:
            error = str(exc)
        else:
            for desc in snapshot.tools:
                server_id, sep, _ = desc.id.partition("__")
                if sep:
                    tools.setdefault(server_id, []).append(desc.id)
        raw = config.plugin_config.get(PLUGIN_ID, {})
        servers = plugin.servers_for(McpConfig.model_validate(raw))
        for server in servers:
            conn = plugin.connection(runtime, server)
            rows.append(
                {
                    "agent": agent_id,
                    "server": server.id,
                    "transport": server.transport,
                    "target": _target(server),
                    "status": conn.status,
                    "restarts": conn.restarts,
                    "tools": sorted(tools.get(server.id, [])),
                    "error": error if conn.status != "connected" else None,
                }
            )
    return rows
