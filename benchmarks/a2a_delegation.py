"""Delegation overhead per remote call (A2A) vs a native sub-agent.

One parent run = the parent's scripted model calls ``agent_run`` once, the
child answers with one scripted text (a few streamed chunks, no tools), the
parent answers. Two ways to reach the same child agent:

- ``native``: the child is an agent of the parent's own runtime (in process,
  ``NativeDelegationService``).
- ``a2a``: the child is served by ``awaken a2a serve`` in a second process on
  127.0.0.1 and registered as a remote delegate (``A2ADelegate``): the call is a
  streamed ``SendStreamingMessage`` over JSON-RPC + SSE, the child's run goes
  into the child server's store (SQLite, its default), the child's events are
  forwarded into the parent's stream.

The two ways are interleaved in rounds (one batch of runs each per round,
after a warm-up that fetched the card and opened the connection). Per run:
wall ms (median of batch medians), the parent process's CPU ms
(``resource.getrusage``) and, for ``a2a``, the child server's CPU ms (from
``/proc/<pid>/stat``). ``overhead`` = ``a2a`` minus ``native``, per remote
call. Both processes share one small machine, so the wall figure is the floor
(no network); CPU is the steadier number. No targets: the figures say what a
remote sub-agent costs next to a local one.

Run: ``hatch run python benchmarks/a2a_delegation.py [--quick]``.
Writes benchmarks/results/a2a_delegation.json (``_quick`` with --quick).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from awaken_protocol_a2a import A2ADelegate
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
)

HERE = Path(__file__).parent
RESULTS = HERE / "results"
KEY = "bench-key-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_child(tmp: Path, store: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": f"{HERE / 'a2a'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "AWAKEN_SERVER_KEYS": f"{KEY}:bench",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    url = f"sqlite:///{tmp / 'child.db'}" if store == "sqlite" else "memory://"
    cmd = [
        sys.executable, "-c", "from awaken_runtime.cli._main import main; raise SystemExit(main())",
        "a2a", "serve", "--agents", str(HERE / "a2a" / "worker.toml"),
        "--setup", "setup_worker:setup", "--store", url,
        "--port", str(port),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    card = f"http://127.0.0.1:{port}/a2a/worker/.well-known/agent-card.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(card, timeout=1).status_code == 200:
                return proc, card
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the child server did not start")


def _cpu_of(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _runtime(card_url: str) -> Runtime:
    def parent_turns(child: str) -> ScriptedExecutor:
        turn = ScriptedTurn.call("agent_run", {"agent_id": child, "prompt": "do the work"})
        return ScriptedExecutor([turn, "The parent is done."], repeat=True)

    child = ScriptedExecutor(["The work is done, as asked."], repeat=True, chunk_size=8)
    builder = AgentRuntimeBuilder(discover=False)
    for pid, executor in (("p-native", parent_turns("worker")), ("p-a2a", parent_turns("remote"))):
        executor.record_requests = False
        builder.with_provider(pid, executor)
        builder.with_model(ModelSpec(id=pid, provider=pid, model="s"))
    child.record_requests = False
    builder.with_provider("p-child", child).with_model(
        ModelSpec(id="m", provider="p-child", model="s")
    )
    builder.with_agent_spec(AgentConfig(id="worker", model_binding="m"))
    builder.with_agent_spec(
        AgentConfig(id="native", model_binding="p-native", delegates=["worker"])
    )
    builder.with_agent_spec(AgentConfig(id="a2a", model_binding="p-a2a", delegates=["remote"]))
    builder.with_remote_delegate("remote", A2ADelegate(card_url, token=KEY))
    return builder.build()


async def _batch(runtime: Runtime, agent: str, n: int, child_pid: int) -> dict[str, float]:
    events: list[Any] = []
    wall: list[float] = []
    cpu0, child0 = _self_cpu(), _cpu_of(child_pid)
    for _ in range(n):
        events.clear()
        t0 = time.perf_counter()
        state = await runtime.run(agent, "go", on_event=events.append)
        wall.append((time.perf_counter() - t0) * 1000)
        assert state.final_text == "The parent is done.", state.final_text
        assert any(getattr(e, "delta", "") for e in events)  # the child's text streamed
    return {
        "wall_ms": statistics.median(wall),
        "cpu_ms": (_self_cpu() - cpu0) * 1000 / n,
        "child_cpu_ms": (_cpu_of(child_pid) - child0) * 1000 / n,
    }


async def _measure(card_url: str, child_pid: int, rounds: int, n: int) -> dict[str, Any]:
    runtime = _runtime(card_url)
    for agent in ("native", "a2a"):  # warm-up: resolution, the card, the connection
        await _batch(runtime, agent, 3, child_pid)
    samples: dict[str, list[dict[str, float]]] = {"native": [], "a2a": []}
    for _ in range(rounds):
        for agent in ("native", "a2a"):
            samples[agent].append(await _batch(runtime, agent, n, child_pid))
    out: dict[str, Any] = {}
    for agent, rows in samples.items():
        out[agent] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None, help="runs per batch")
    parser.add_argument(
        "--child-store", choices=["sqlite", "memory"], default="sqlite", help="the child's store"
    )
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 7)
    runs = args.runs or (5 if args.quick else 30)
    with tempfile.TemporaryDirectory() as tmp:
        proc, card = _start_child(Path(tmp), args.child_store)
        try:
            figures = asyncio.run(_measure(card, proc.pid, rounds, runs))
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    native, remote = figures["native"], figures["a2a"]
    overhead = {
        "wall_ms": remote["wall_ms"] - native["wall_ms"],
        "cpu_ms": remote["cpu_ms"] - native["cpu_ms"],
        "total_cpu_ms": remote["cpu_ms"] + remote["child_cpu_ms"] - native["cpu_ms"],
    }
    print(f"{'way':8} {'wall ms/run':>12} {'parent CPU ms':>14} {'child CPU ms':>13}")
    for name, row in (("native", native), ("a2a", remote)):
        child_cpu = f"{row['child_cpu_ms']:13.2f}" if name == "a2a" else f"{'-':>13}"
        print(f"{name:8} {row['wall_ms']:12.2f} {row['cpu_ms']:14.2f} {child_cpu}")
    print(
        f"overhead per remote call: {overhead['wall_ms']:.2f} ms wall, "
        f"{overhead['cpu_ms']:.2f} ms parent CPU, {overhead['total_cpu_ms']:.2f} ms CPU "
        f"both processes; a2a/native wall x{remote['wall_ms'] / native['wall_ms']:.1f}"
    )
    RESULTS.mkdir(exist_ok=True)
    name = "a2a_delegation" + ("" if args.child_store == "sqlite" else "_memory")
    name += "_quick.json" if args.quick else ".json"
    record = {
        "benchmark": "a2a_delegation",
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "rounds": rounds,
        "runs_per_batch": runs,
        "child_store": args.child_store,
        "native": native,
        "a2a": remote,
        "overhead_per_remote_call": overhead,
        "wall_ratio": remote["wall_ms"] / native["wall_ms"],
    }
    (RESULTS / name).write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {RESULTS / name}")


if __name__ == "__main__":
    main()
