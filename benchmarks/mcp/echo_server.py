"""The MCP server of ``benchmarks/mcp_overhead.py``: one ``echo`` tool, stdio or HTTP.

``python echo_server.py`` serves stdio; ``python echo_server.py --http PORT``
serves stateless streamable HTTP on 127.0.0.1. Nothing is printed to stdout.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo", log_level="CRITICAL")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.settings.log_level = "CRITICAL"
        server.run("streamable-http", port=int(sys.argv[2]), stateless_http=True)
    else:
        server.run("stdio")
