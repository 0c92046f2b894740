"""Discovery registers the ``mcp`` plugin without importing the MCP SDK.

Every runtime built with ``discover=True`` registers the ``mcp`` plugin, so
importing the SDK there (about half a second) would slow every runtime, MCP
or not. An agent that enables ``mcp`` loads it with its first connection.
"""

from __future__ import annotations

import subprocess
import sys


def test_discovery_registers_the_plugin_without_importing_the_sdk() -> None:
    code = (
        "import sys\n"
        "from awaken_runtime import AgentRuntimeBuilder\n"
        "runtime = AgentRuntimeBuilder().build()\n"
        "print('mcp' in runtime.discovery.plugins, 'mcp' in sys.modules,"
        " 'mcp_types' in sys.modules)\n"
        "from awaken_mcp import McpServerConfig\n"
        "plugin = runtime.discovery.plugins['mcp'].value\n"
        "plugin.connection(runtime, McpServerConfig(id='s', transport='stdio', command='true'))\n"
        "print('mcp' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["True", "False", "False", "True"], done.stderr
