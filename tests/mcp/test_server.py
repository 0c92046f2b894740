"""Awaken tools over MCP, driven by the official Python SDK client (in process, HTTP, stdio)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp_setup import add, shout

from awaken_ext_permissions import PermissionsPlugin
from awaken_mcp import build_server
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    ResolutionError,
    ScriptedExecutor,
)
from mcp import Client, StdioServerParameters

HERE = Path(__file__).parent
AWAKEN = str(Path(sys.executable).parent / "awaken")
ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdefgh"


def runtime(turns: list[object] | None = None) -> object:
    allow = {"permissions": {"default": "allow"}}
    return (
        AgentRuntimeBuilder(discover=False)
        .with_plugin(PermissionsPlugin())
        .with_tool(add)
        .with_tool(shout)
        .with_model(ModelSpec(id="m", provider="s", model="m"))
        .with_provider("s", ScriptedExecutor(turns or ["the agent says hi"], repeat=True))
        .with_agent_spec(
            AgentConfig(
                id="calc",
                model_binding="m",
                tool_ids=["add", "shout"],
                instructions="x",
                plugin_ids=["permissions"],
                plugin_config=allow,
            )
        )
        .build()
    )


def text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_in_process_client_lists_and_calls_tools_and_agents() -> None:
    server = build_server(runtime(), ["calc"], agents_as_tools=True)  # type: ignore[arg-type]
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {"add", "shout", "calc"}
        assert listed["add"].input_schema["properties"]["a"]["type"] == "integer"
        assert "Add two integers" in (listed["add"].description or "")
        result = await client.call_tool("add", {"a": 2, "b": "40"})  # coerced like in a run
        assert not result.is_error and text(result) == "42"
        broke = await client.call_tool("shout", {"text": "boom"})
        assert broke.is_error and "the tool broke" in text(broke)
        wrong = await client.call_tool("add", {"a": "many"})
        assert wrong.is_error
        asked = await client.call_tool("calc", {"prompt": "hello"})
        assert not asked.is_error and text(asked) == "the agent says hi"
        empty = await client.call_tool("calc", {"prompt": "  "})
        assert empty.is_error


def test_serving_an_unknown_agent_names_it() -> None:
    with pytest.raises(ResolutionError, match="nobody"):
        build_server(runtime(), ["nobody"])  # type: ignore[arg-type]


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "AWAKEN_SERVER_KEYS": f"{ALICE}:alice,{BOB}:bob",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def _serve_args(tmp: Path) -> list[str]:
    return [
        "mcp", "serve",
        "--agents", str(HERE / "agents"),
        "--setup", "mcp_setup:setup",
        "--store", f"sqlite:///{tmp / 'awaken.db'}",
    ]  # fmt: skip


def _start(tmp: Path, name: str) -> Served:
    port = _free_port()
    log = tmp / f"{name}.log"
    cmd = [AWAKEN, *_serve_args(tmp), "--http", "--port", str(port), "--agents-as-tools"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=_env(), stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, f"awaken mcp serve exited: {log.read_text()}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return Served(url, proc, log)
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


def _stop(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.wait(15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        raise


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = _start(tmp_path_factory.mktemp("mcp-http"), "serve")
    yield served
    _stop(served)


async def test_python_sdk_client_over_streamable_http_with_a_bearer_key(
    http_server: Served,
) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"})
    async with http, Client(streamable_http_client(http_server.url, http_client=http)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"add", "shout", "calc"}
        result = await client.call_tool("add", {"a": 20, "b": 22})
        assert text(result) == "42"
        echoed = await client.call_tool("calc", {"prompt": "ping"})
        assert not echoed.is_error and "ping" in text(echoed)


def test_no_key_or_a_wrong_key_is_refused(http_server: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer not-a-known-key-at-all"}):
        got = httpx.post(http_server.url, json=body, headers=headers, timeout=10)
        assert got.status_code == 401
        assert got.headers["content-type"] == "application/problem+json"
        assert "WWW-Authenticate" in got.headers


def test_handshake_era_initialize_gets_no_session(http_server: Served) -> None:
    # Stateless: no Mcp-Session-Id, so any worker can answer the next request.
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    headers = {
        "Authorization": f"Bearer {BOB}",
        "Accept": "application/json, text/event-stream",
    }
    got = httpx.post(http_server.url, json=init, headers=headers, timeout=10)
    assert got.status_code == 200, got.text
    assert "mcp-session-id" not in got.headers
    assert "serverInfo" in got.text


def test_two_workers_serve_one_client_without_sessions(http_server: Served, tmp_path: Path) -> None:
    # A handshake-era client initializes on one worker and calls on another.
    other = _start(tmp_path, "second")
    try:
        headers = {
            "Authorization": f"Bearer {ALICE}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        first = httpx.post(http_server.url, json=init, headers=headers, timeout=10)
        assert first.status_code == 200 and "mcp-session-id" not in first.headers
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
        second = httpx.post(other.url, json=call, headers=headers, timeout=10)
        assert second.status_code == 200, second.text
        assert '"text":"3"' in second.text.replace(" ", "")
    finally:
        _stop(other)


async def test_python_sdk_client_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(command=AWAKEN, args=_serve_args(tmp_path), env=_env())
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"add", "shout"}  # agents only with --agents-as-tools
        result = await client.call_tool("shout", {"text": "hi"})
        assert text(result) == "HI!"


JS = HERE / "js"


def test_typescript_sdk_client_over_streamable_http(http_server: Served) -> None:
    import json
    import shutil

    if not (JS / "node_modules").is_dir() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node or tests/mcp/js/node_modules missing: .ci/run must `npm ci` them")
        pytest.skip("run `npm ci --prefix tests/mcp/js` (needs Node 20) for the TS client test")
    env = {**os.environ, "SERVER_URL": http_server.url, "SERVER_KEY": ALICE}
    done = subprocess.run(
        ["node", "mcp_client.mjs"], cwd=JS, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"mcp_client.mjs failed:\n{done.stderr}\n{done.stdout}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["tools"] == ["add", "calc", "shout"]
    assert out["addSchema"]["required"] == ["a", "b"]
    assert out["add"] == "5" and out["shout"] == "TS!"
    assert out["broke"]["isError"] and "the tool broke" in out["broke"]["text"]
    assert not out["agent"]["isError"] and "from ts" in out["agent"]["text"]
    assert out["sessionId"] is None, "stateless: the server hands out no session"
    assert out["refused"] != "connected" and "401" in out["refused"]
