"""Awaken MCP: MCP servers as a tool source, and awaken tools served over MCP.

Client: enable the ``mcp`` plugin on an agent and list servers under
``plugin_config.mcp.servers`` (or register ``McpPlugin(servers=[...])`` on the
builder); their tools appear as ``<server>__<tool>``. Server:
``build_server(runtime, agent_ids)`` and ``awaken mcp serve``.

The names load on first use: plugin discovery imports this package (every
runtime built with ``discover=True`` registers the ``mcp`` plugin), and the MCP
SDK takes about half a second to import, which only agents that use an MCP
server, or serve one, should pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awaken_runtime._lazy import lazy_names

if TYPE_CHECKING:
    from ._config import McpConfig, McpServerConfig
    from ._connection import McpConnection, McpUnavailable
    from ._http import create_http_app, serve_stdio
    from ._listing import list_servers
    from ._names import tool_id
    from ._plugin import PLUGIN_ID, McpPlugin
    from ._results import to_output
    from ._server import AGENT_INPUT_SCHEMA, PRINCIPAL_STATE, build_server, offered_tools
    from ._tool import McpTool

_HOMES = {
    "AGENT_INPUT_SCHEMA": "._server",
    "PLUGIN_ID": "._plugin",
    "PRINCIPAL_STATE": "._server",
    "McpConfig": "._config",
    "McpConnection": "._connection",
    "McpPlugin": "._plugin",
    "McpServerConfig": "._config",
    "McpTool": "._tool",
    "McpUnavailable": "._connection",
    "build_server": "._server",
    "create_http_app": "._http",
    "list_servers": "._listing",
    "offered_tools": "._server",
    "serve_stdio": "._http",
    "to_output": "._results",
    "tool_id": "._names",
}

__all__ = [
    "AGENT_INPUT_SCHEMA",
    "PLUGIN_ID",
    "PRINCIPAL_STATE",
    "McpConfig",
    "McpConnection",
    "McpPlugin",
    "McpServerConfig",
    "McpTool",
    "McpUnavailable",
    "build_server",
    "create_http_app",
    "list_servers",
    "offered_tools",
    "serve_stdio",
    "to_output",
    "tool_id",
]

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
