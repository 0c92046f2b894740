"""Awaken MCP: MCP servers as a tool source, and awaken tools served over MCP.

Client: enable the ``mcp`` plugin on an agent and list servers under
``plugin_config.mcp.servers`` (or register ``McpPlugin(servers=[...])`` on the
builder); their tools appear as ``<server>__<tool>``. Server:
``build_server(runtime, agent_ids)`` and ``awaken mcp serve``.
"""

from __future__ import annotations

from ._config import McpConfig, McpServerConfig
from ._connection import McpConnection, McpUnavailable
from ._http import create_http_app, serve_stdio
from ._listing import list_servers
from ._names import tool_id
from ._plugin import PLUGIN_ID, McpPlugin
from ._results import to_output
from ._server import AGENT_INPUT_SCHEMA, PRINCIPAL_STATE, build_server, offered_tools
from ._tool import McpTool

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
