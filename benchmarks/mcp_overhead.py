"""Per-call overhead of an MCP tool (stdio, streamable HTTP) vs the same function as a local tool.

The function is ``echo(text) -> text``. Three ways to reach it:

- ``local``: an ``@tool`` function registered on the builder.
- ``mcp-stdio``: the same function on an MCP server (the official SDK's
  ``MCPServer``, ``benchmarks/mcp/echo_server.py``) started over stdio by the
  ``mcp`` plugin.
- ``mcp-http``: that server over stateless streamable HTTP on 127.0.0.1.

Two measurements per way, both after a warm-up (the connection is open and
the tools are listed before timing starts):

- **call**: ``await tool.call(args, ctx)`` alone, N calls in a row: what one
  tool call costs, µs per call (median of batches; p90 of batches too).
- **run**: ``Runtime.run`` of a scripted agent making S tool calls (one per
  step) then answering: µs per step, so the MCP cost is seen through the loop.

``overhead`` = the way's median minus ``local``'s. Both sides run in one
process on one machine, so the figures are the floor of what MCP adds (JSON-RPC
framing, the SDK's validation, a pipe or a loopback HTTP round trip), without
any network latency. No targets: the numbers are for choosing a transport.

Run: ``hatch run python benchmarks/mcp_overhead.py [--quick]``.
Writes benchmarks/results/mcp_overhead.json (``_quick`` with --quick).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import socket
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awaken_mcp import McpPlugin, McpServerConfig
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    CancellationToken,
    ModelSpec,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
    Store,
    Tool,
    ToolCallContext,
    tool,
)

HERE = Path(__file__).parent
SERVER = str(HERE / "mcp" / "echo_server.py")


@tool
def echo(text: str) -> str:
    """Return the text.

    Args:
        text: The text.
    """
    return text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the HTTP echo server exited")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("the HTTP echo server did not start")


def _runtime(way: str, steps: int, server: McpServerConfig | None) -> Runtime:
    name = "echo" if server is None else f"{server.id}__echo"
    turns: list[Any] = [ScriptedTurn.call(name, {"text": "hello"}) for _ in range(steps)]
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="s", model="m"))
        .with_provider("s", ScriptedExecutor([*turns, "done"], repeat=True))
    )
    if server is None:
        builder.with_tool(echo)
        agent = AgentConfig(id="a", model_binding="m", tool_ids=["echo"], max_steps=steps + 2)
    else:
        builder.with_plugin(McpPlugin([server]))
        agent = AgentConfig(id="a", model_binding="m", plugin_ids=["mcp"], max_steps=steps + 2)
    return builder.with_agent_spec(agent).build()


async def _tool_of(rt: Runtime, server: McpServerConfig | None) -> Tool:
    if server is None:
        return rt.registries.tools["echo"]
    plugin = rt.registries.plugins["mcp"]
    assert isinstance(plugin, McpPlugin)
    (found,) = await plugin.catalog(None, rt)
    return found


def _ctx() -> ToolCallContext:
    cid = uuid.uuid4().hex
    return ToolCallContext(Store({}), f"run-{cid}", "bench", cid, "echo", CancellationToken())


async def _calls(t: Tool, n: int, batches: int) -> list[float]:
    ctx, args = _ctx(), {"text": "hello"}
    out: list[float] = []
    for _ in range(batches):
        gc.collect()
        start = time.perf_counter()
        for _ in range(n):
            result = await t.call(args, ctx)
        out.append((time.perf_counter() - start) / n * 1e6)
        assert result.content == "hello" and not result.is_error, result
    return out


async def _runs(rt: Runtime, steps: int, reps: int) -> list[float]:
    out: list[float] = []
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        state = await rt.run("a", "go")
        out.append((time.perf_counter() - start) / (steps + 1) * 1e6)
        assert state.final_text == "done", state.end_cause
    return out


def _p90(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.9) - 1)]


async def measure(quick: bool) -> dict[str, Any]:
    n, batches = (50, 5) if quick else (300, 15)
    steps, reps = (10, 3) if quick else (50, 9)
    port = _free_port()
    http = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, http)
        ways: dict[str, McpServerConfig | None] = {
            "local": None,
            "mcp-stdio": McpServerConfig(
                id="e", transport="stdio", command=sys.executable, args=[SERVER]
            ),
            "mcp-http": McpServerConfig(
                id="e", transport="http", url=f"http://127.0.0.1:{port}/mcp"
            ),
        }
        rows: dict[str, dict[str, Any]] = {}
        for way, server in ways.items():
            rt = _runtime(way, steps, server)
            try:
                t = await _tool_of(rt, server)
                await _calls(t, 10, 1)  # warm-up: connection open, SDK paths hot
                await _runs(rt, steps, 1)
                call = await _calls(t, n, batches)
                run = await _runs(rt, steps, reps)
            finally:
                await rt.aclose()
            rows[way] = {
                "call_us_median": statistics.median(call),
                "call_us_p90": _p90(call),
                "run_us_per_step_median": statistics.median(run),
                "call_batches": batches,
                "calls_per_batch": n,
                "runs": reps,
                "steps_per_run": steps,
            }
    finally:
        http.terminate()
        http.wait(10)
    base = rows["local"]
    for row in rows.values():
        row["call_overhead_us"] = row["call_us_median"] - base["call_us_median"]
        row["run_overhead_us_per_step"] = (
            row["run_us_per_step_median"] - base["run_us_per_step_median"]
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.quick))
    print(
        f"{'way':<10} {'µs/call':>10} {'p90':>10} {'overhead':>10} "
        f"{'µs/step (run)':>14} {'overhead':>10}"
    )
    for way, r in rows.items():
        print(
            f"{way:<10} {r['call_us_median']:>10.1f} {r['call_us_p90']:>10.1f} "
            f"{r['call_overhead_us']:>10.1f} {r['run_us_per_step_median']:>14.1f} "
            f"{r['run_overhead_us_per_step']:>10.1f}"
        )
    out = HERE / "results" / ("mcp_overhead_quick.json" if args.quick else "mcp_overhead.json")
    out.parent.mkdir(exist_ok=True)
    doc = {
        "benchmark": "mcp_overhead",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "quick": args.quick,
        "results": rows,
    }
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
