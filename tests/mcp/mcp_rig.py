"""Helpers of the awaken-mcp tests: real MCP servers over stdio, scripted agents."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from awaken_mcp import McpPlugin, McpServerConfig
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
)

HERE = Path(__file__).parent
TOY = str(HERE / "toy_server.py")


def toy_server(marks: Path, **kw: Any) -> McpServerConfig:
    """The toy server over stdio, recording into ``marks``."""
    return McpServerConfig(
        id=kw.pop("id", "toy"),
        transport="stdio",
        command=sys.executable,
        args=[TOY],
        env={"TOY_MARKS": str(marks)},
        **kw,
    )


def time_server() -> McpServerConfig:
    """``mcp-server-time`` from PyPI, over stdio, with a fixed local zone."""
    return McpServerConfig(
        id="time",
        transport="stdio",
        command=sys.executable,
        args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
    )


def wait_listening(port: int, what: str, timeout: float = 30.0) -> None:
    """Block until something accepts connections on 127.0.0.1:``port``."""
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert time.monotonic() < deadline, f"{what} did not start listening on {port}"
        time.sleep(0.1)


def build(
    turns: Sequence[Any],
    servers: Sequence[McpServerConfig] = (),
    **agent: Any,
) -> Runtime:
    """A runtime with one agent ``a`` enabling ``mcp`` (plus ``agent`` fields)."""
    plugins = ["mcp", *agent.pop("plugin_ids", [])]
    return (
        AgentRuntimeBuilder(discover=True)
        .with_plugin(McpPlugin(servers))
        .with_model(ModelSpec(id="m", provider="scripted", model="m"))
        .with_provider("scripted", ScriptedExecutor(turns))
        .with_agent_spec(AgentConfig(id="a", model_binding="m", plugin_ids=plugins, **agent))
        .build()
    )


__all__ = ["TOY", "ScriptedTurn", "build", "time_server", "toy_server", "wait_listening"]
