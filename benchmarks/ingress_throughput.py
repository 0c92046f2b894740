"""Run ingress throughput: scripted 5-step runs through the PostgreSQL queue, 1, 2 and 4 workers.

Each round starts W worker processes (``awaken worker``, concurrency 4 each,
Postgres store with ``durable=True``), waits until every one is taking jobs,
submits R runs, and times until all R runs have ended. Reported per W: steps
per second (R * 6 model steps / elapsed; 5 tool steps and the answer) and
the scaling against one worker. Rounds are interleaved (1, 2, 4, 1, 2, 4, ...)
and the median per W is kept, so the machine's noise hits every W alike. On
a 2-core machine with the database on the same cores, more than two workers
compete with PostgreSQL for CPU: read the scaling column with that in mind.

Run: ``hatch run python benchmarks/ingress_throughput.py [--runs 60] [--rounds 2]``.
Needs ``AWAKEN_TEST_POSTGRES_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``);
everything goes to private schemas dropped at the end. Writes
benchmarks/results/ingress_throughput.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from awaken_run_ingress import RunIngress
from awaken_runtime import Phase
from awaken_runtime.stores import open_store

HERE = Path(__file__).resolve().parent
DSN = os.environ.get("AWAKEN_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
MODEL_STEPS = 6


def _workers(n: int, queue: str, store_url: str) -> list[subprocess.Popen[str]]:
    # The caller's PYTHONPATH goes after the agents' folder: a checkout's packages/*/src
    # there measure that checkout's worker (the "before" column of a change).
    path = os.pathsep.join(p for p in (str(HERE / "ingress"), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "awaken_run_ingress",
                "worker",
                "--queue",
                DSN,
                "--schema",
                queue,
                "--store",
                store_url,
                "--setup",
                "bench_agents:configure",
                "--concurrency",
                "4",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(n)
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("awaken worker:"):
            raise SystemExit(f"a worker did not start: {line!r}")
    return procs


async def _round(n: int, runs: int, tag: str) -> float:
    queue, store_schema = f"bench_q_{tag}", f"bench_s_{tag}"
    store_url = f"{DSN}?schema={store_schema}"
    async with RunIngress(DSN, schema=queue):
        pass  # install the queue before the workers start
    warm = open_store(store_url)
    await warm.open()
    procs = _workers(n, queue, store_url)
    try:
        started = time.perf_counter()
        async with RunIngress(DSN, schema=queue) as ingress:
            ids = [(await ingress.submit("stepper", "go")).run_id for _ in range(runs)]
        pending = set(ids)
        while pending:
            await asyncio.sleep(0.02)
            for run_id in list(pending):
                record = await warm.get_run(run_id)
                if record is not None and record.phase is Phase.ENDED:
                    pending.discard(run_id)
        return time.perf_counter() - started
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        await warm.close()
        with psycopg.connect(DSN, autocommit=True) as conn:
            for schema in (queue, store_schema):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--label", default="", help="suffix of the JSON file (e.g. before)")
    args = parser.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    times: dict[int, list[float]] = {n: [] for n in counts}
    for r in range(args.rounds):
        for n in counts:
            times[n].append(asyncio.run(_round(n, args.runs, f"{os.getpid()}_{r}_{n}")))
    base = args.runs * MODEL_STEPS / statistics.median(times[counts[0]])
    rows = []
    print(f"{'workers':>7} {'runs':>5} {'median s':>9} {'steps/s':>8} {'scaling':>8}")
    for n in counts:
        median = statistics.median(times[n])
        rate = args.runs * MODEL_STEPS / median
        rows.append(
            {
                "workers": n,
                "runs": args.runs,
                "seconds": times[n],
                "steps_per_s": rate,
                "scaling": rate / base,
            }
        )
        print(f"{n:>7} {args.runs:>5} {median:>9.2f} {rate:>8.1f} {rate / base:>7.2f}x")
    out = HERE / "results" / f"ingress_throughput{'_' + args.label if args.label else ''}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {"when": datetime.now(UTC).isoformat(), "cpus": os.cpu_count(), "rows": rows},
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
