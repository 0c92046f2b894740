"""awaken-server under load: concurrent streaming runs from a client process.

A real ``awaken serve`` (one uvicorn process, SQLite store, the scripted model
of ``server_agents/``) serves C = 1, 50 and 200 concurrent streaming runs
(``POST /v1/threads/{id}/runs`` with ``stream: true``) sent by this process
with httpx. Each run: RunStart, one tool call, a 40-token answer streamed in
6-character chunks, RunFinish (about 50 events).

Reported per C:

- time to first event (request sent -> first SSE event), p50 and p99, ms
  (C = 1 and 50 repeat in rounds, 100 and 2 runs, so CPU ticks average out);
- events/s over the whole level (all events received / wall time);
- server CPU per event (the server process's user+system time over the level /
  events), next to ``Runtime.stream`` in-process on the same agent and store
  kind (this process's CPU per event for C concurrent ``runtime.stream`` runs);
  the ratio is the cost of HTTP, SSE and JSON;
- the client's own CPU per event (it shares the machine: at high C it is part of
  what bounds time to first event);
- a check that every stream's ids are 1..N with RunFinish last (nothing lost,
  nothing repeated).

Then RSS per open stream: C runs of the ``hold`` agent (its tool sleeps 3 s)
are opened at once and the server's RSS is sampled while all are open:
(RSS open - RSS before) / C, in KiB.

Run: ``hatch run python benchmarks/server_load.py [--quick]`` (``--quick``:
C = 1 and 20). Writes benchmarks/results/server_load.json (or server_load_quick.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
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

HERE = Path(__file__).parent
AGENTS = HERE / "server_agents"
RESULTS = HERE / "results"
KEY = "bench-key-0123456789abcdef"
CLK = os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK  # utime + stime


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _start_server(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": f"{AGENTS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "AWAKEN_SERVER_KEYS": f"{KEY}:bench",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    cmd = [
        sys.executable, "-m", "awaken_server", "--agents", str(AGENTS),
        "--setup", "bench_setup:setup", "--store", f"sqlite:///{tmp / 'bench.db'}",
        "--port", str(port), "--max-runs-per-key", "10000",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("awaken serve did not start")


async def _one_stream(client: httpx.AsyncClient, thread_id: str, agent: str) -> dict[str, Any]:
    body = {"agent_id": agent, "input": f"{agent} please", "stream": True}
    sent = time.perf_counter()
    first: float | None = None
    ids: list[int] = []
    last_type = ""
    async with client.stream("POST", f"/v1/threads/{thread_id}/runs", json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if line.startswith("id:"):
                ids.append(int(line[3:]))
                if first is None:
                    first = time.perf_counter()
            elif line.startswith("event:"):
                last_type = line[6:].strip()
    return {
        "ttfe_ms": ((first or time.perf_counter()) - sent) * 1000,
        "events": len(ids),
        "contiguous": ids == list(range(1, len(ids) + 1)) and last_type == "run_finish",
    }


async def _threads(client: httpx.AsyncClient, n: int) -> list[str]:
    out = []
    for _ in range(n):
        r = await client.post("/v1/threads", json={})
        out.append(r.json()["thread_id"])
    return out


def _client(url: str, c: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=120,
        limits=httpx.Limits(max_connections=c + 5, max_keepalive_connections=c + 5),
    )


async def _level(url: str, pid: int, c: int) -> dict[str, Any]:
    async with _client(url, c) as client:
        await _one_stream(client, (await _threads(client, 1))[0], "bench")  # warm-up
        # Small levels repeat (rounds of C at once) so CPU ticks (10 ms) average out.
        rounds = max(1, 100 // c)
        threads = await _threads(client, c * rounds)
        runs: list[dict[str, Any]] = []
        cpu0, t0, client0 = _cpu_s(pid), time.perf_counter(), time.process_time()
        for k in range(rounds):
            batch = threads[k * c : (k + 1) * c]
            runs += await asyncio.gather(*(_one_stream(client, t, "bench") for t in batch))
        wall, cpu = time.perf_counter() - t0, _cpu_s(pid) - cpu0
        client_cpu = time.process_time() - client0
    ttfe = sorted(r["ttfe_ms"] for r in runs)
    events = sum(r["events"] for r in runs)
    return {
        "concurrency": c,
        "runs": len(runs),
        "ttfe_p50_ms": statistics.median(ttfe),
        "ttfe_p99_ms": ttfe[min(len(ttfe) - 1, int(len(ttfe) * 0.99))],
        "events": events,
        "events_per_s": events / wall,
        "server_cpu_us_per_event": cpu / events * 1e6,
        # The client shares the 2 cores: at high C its own CPU bounds the figures too.
        "client_cpu_us_per_event": client_cpu / events * 1e6,
        "all_contiguous": all(r["contiguous"] for r in runs),
        "wall_s": wall,
    }


async def _rss_level(url: str, pid: int, c: int, hold_s: float) -> dict[str, Any]:
    async with _client(url, c) as client:
        threads = await _threads(client, c)
        await asyncio.sleep(0.5)
        before = _rss_kib(pid)
        tasks = [asyncio.create_task(_one_stream(client, t, "hold")) for t in threads]
        await asyncio.sleep(hold_s * 0.6)  # every stream is open, its tool sleeping
        during = _rss_kib(pid)
        runs = await asyncio.gather(*tasks)
    return {
        "concurrency": c,
        "rss_before_kib": before,
        "rss_open_kib": during,
        "rss_per_stream_kib": (during - before) / c,
        "all_contiguous": all(r["contiguous"] for r in runs),
    }


async def _in_process(c: int, tmp: Path) -> dict[str, Any]:
    """CPU per event of ``runtime.stream`` in this process, same agent and store kind."""
    sys.path.insert(0, str(AGENTS))
    from awaken_runtime.stores import open_store
    from awaken_server import AgentCatalog, load_agent_files, load_setup

    files, models = load_agent_files(AGENTS)
    catalog = AgentCatalog(files=files, models=models, setup=load_setup("bench_setup:setup"))
    store = open_store(f"sqlite:///{tmp / f'inproc-{c}.db'}")
    runtime = catalog.build(store)

    async def one(i: int) -> int:
        n = 0
        async for _ in runtime.stream("bench", "bench please", thread_id=f"t{c}-{i}"):
            n += 1
        return n

    await one(-1)  # warm-up
    rounds = max(1, 100 // c)
    cpu0 = time.process_time()
    counts: list[int] = []
    for k in range(rounds):
        counts += await asyncio.gather(*(one(k * c + i) for i in range(c)))
    cpu = time.process_time() - cpu0
    await store.close()
    return {"concurrency": c, "cpu_us_per_event": cpu / sum(counts) * 1e6}


def _table(levels: list[dict[str, Any]], rss: list[dict[str, Any]]) -> str:
    head = (
        f"{'C':>5} {'ttfe p50':>9} {'ttfe p99':>9} {'events/s':>9} {'srv us/ev':>10} "
        f"{'inproc us/ev':>13} {'ratio':>6} {'client us/ev':>13} {'seq ok':>7}"
    )
    rows = [head, "-" * len(head)]
    for lv in levels:
        rows.append(
            f"{lv['concurrency']:>5} {lv['ttfe_p50_ms']:>7.1f}ms {lv['ttfe_p99_ms']:>7.1f}ms "
            f"{lv['events_per_s']:>9.0f} {lv['server_cpu_us_per_event']:>10.1f} "
            f"{lv['inproc_cpu_us_per_event']:>13.1f} {lv['cpu_ratio']:>6.1f} "
            f"{lv['client_cpu_us_per_event']:>13.1f} "
            f"{'yes' if lv['all_contiguous'] else 'NO':>7}"
        )
    rows.append("")
    for r in rss:
        rows.append(
            f"RSS with {r['concurrency']} open streams: {r['rss_open_kib'] / 1024:.1f} MiB "
            f"(+{r['rss_per_stream_kib']:.1f} KiB per stream; seq ok: {r['all_contiguous']})"
        )
    return "\n".join(rows)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    levels_c = (1, 20) if args.quick else (1, 50, 200)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        proc, url = _start_server(tmp)
        try:
            levels = []
            for c in levels_c:
                lv = await _level(url, proc.pid, c)
                inproc = await _in_process(c, tmp)
                lv["inproc_cpu_us_per_event"] = inproc["cpu_us_per_event"]
                lv["cpu_ratio"] = lv["server_cpu_us_per_event"] / inproc["cpu_us_per_event"]
                levels.append(lv)
            rss = [await _rss_level(url, proc.pid, levels_c[-1], 3.0)]
        finally:
            proc.terminate()
            proc.wait(30)
    return {"levels": levels, "rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="C = 1 and 20 only")
    args = parser.parse_args()
    load_before = os.getloadavg()
    result = asyncio.run(main_async(args))
    print(_table(result["levels"], result["rss"]))
    out = {
        "benchmark": "server_load",
        "at": datetime.now(UTC).isoformat(),
        "quick": args.quick,
        **result,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "python": platform.python_version(),
        "git": subprocess.run(
            ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip(),
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("server_load_quick.json" if args.quick else "server_load.json")
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {path}")
    if not all(lv["all_contiguous"] for lv in result["levels"]):
        raise SystemExit("FAIL: a stream lost or repeated events")


if __name__ == "__main__":
    main()
