"""Postgres store: per-step commit cost vs thread size, next to SQLite and LangGraph on Postgres.

The step and its timing loop are those of ``store_append.py`` (imported from it): an assistant
message with one tool call, its tool result, and one state batch (a counter
plus one field merged into a COMMUTATIVE object). For each history size H in
(10, 1,000, 10,000 messages) a thread is seeded with H messages, then S steps
are committed one by one, round-robin over the three threads. Reported:
median and p90 ms per step commit, the growth ratio cost(10,000) / cost(10)
(O(new data) means ~1.0), and the time to load a 10,000-message thread in a
fresh store object.

Rows, all in the same run on the same machine:

- ``sqlite``: ``SQLiteStore`` (WAL, ``synchronous=NORMAL``: survives a killed
  process, not a power loss); ``sqlite-full``: ``durable=True``
  (``synchronous=FULL``: fsync per commit, survives power loss);
- ``postgres``: ``PostgresStore`` over TCP to the local server, one
  transaction per commit with the server's durability settings (printed:
  ``fsync``, ``synchronous_commit``; with both on, COMMIT waits for the WAL
  flush - comparable to ``sqlite-full``);
- ``postgres-async``: ``durable=False`` (``synchronous_commit=off``: COMMIT does not
  wait for the WAL flush; survives a killed process, a server crash may lose
  the last commits - comparable to ``sqlite``);
- ``lg-postgres``: LangGraph's ``AsyncPostgresSaver`` (langgraph-checkpoint-postgres)
  on the same server and settings, saving the same transcript through a
  ``StateGraph`` with an ``add_messages`` channel, one ``ainvoke`` per step.

Run: ``hatch run bench:store-postgres [--quick]`` (LangGraph is installed in the
``bench`` env only; elsewhere its row is skipped). Needs
``AWAKEN_TEST_POSTGRES_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
Everything is written to a private schema that is dropped at the end. Writes
benchmarks/results/store_postgres.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from store_append import HAVE_LANGGRAPH, SIZES, _awaken, _seed, _stats, lg_app, lg_history, lg_step

from awaken_runtime.stores import ScopeBinding, SQLiteStore
from awaken_store_postgres import PostgresStore

RESULTS = Path(__file__).with_name("results")
DSN = os.environ.get("AWAKEN_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


async def _load_10k(make: Any) -> float:
    store = make()
    b = ScopeBinding("load", "p", "ns")
    await _seed(store, b, 10_000)
    await store.close()
    reader = make()
    await reader.load(ScopeBinding("warm-up", "p", "ns"))  # open the pool outside the timing
    t0 = time.perf_counter()
    snap = await reader.load(b)
    elapsed = (time.perf_counter() - t0) * 1000
    assert len(snap.messages) == 10_000
    await reader.close()
    return elapsed


async def _langgraph(schema: str, size: int, steps: int) -> dict[str, float] | None:
    if not HAVE_LANGGRAPH:
        return None
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
    except ImportError:
        return None

    conn = await psycopg.AsyncConnection.connect(
        DSN,
        autocommit=True,
        prepare_threshold=0,
        row_factory=dict_row,  # what AsyncPostgresSaver.from_conn_string sets up
        options=f"-c search_path={schema}",
    )
    await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}".encode())
    saver = AsyncPostgresSaver(conn)  # type: ignore[arg-type]
    await saver.setup()
    app = lg_app(saver)
    config: Any = {"configurable": {"thread_id": f"lg-{size}"}}
    await app.ainvoke(lg_history(size), config)
    notes: dict[str, int] = {}
    times = []
    for i in range(1, steps + 1):
        step = lg_step(size + i, notes)
        t0 = time.perf_counter()
        await app.ainvoke(step, config)
        times.append((time.perf_counter() - t0) * 1000)
    await conn.close()
    return _stats(times)


def _server() -> dict[str, str]:
    with psycopg.connect(DSN) as conn:
        settings = {
            name: str(conn.execute(f"SHOW {name}".encode()).fetchone()[0])  # type: ignore[index]
            for name in ("server_version", "fsync", "synchronous_commit", "wal_sync_method")
        }
    return settings


def _drop(*schemas: str) -> None:
    with psycopg.connect(DSN, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    parser.add_argument("--steps", type=int, default=200, help="timed step commits per cell")
    args = parser.parse_args()
    steps = 20 if args.quick else args.steps
    tag = f"bench_{os.getpid()}_{int(time.time())}"
    schemas = [f"{kind}_{tag}" for kind in ("aw", "aw_load", "lg", "aw_async", "aw_async_load")]
    tmp = Path(tempfile.mkdtemp(prefix="awaken-bench-"))
    server = _server()
    backends: dict[str, tuple[Any, Any]] = {
        "sqlite": (
            lambda: SQLiteStore(tmp / "awaken.db"),
            lambda: SQLiteStore(tmp / "load.db"),
        ),
        "sqlite-full": (
            lambda: SQLiteStore(tmp / "full.db", durable=True),
            lambda: SQLiteStore(tmp / "load-full.db", durable=True),
        ),
        "postgres": (
            lambda: PostgresStore(DSN, schema=schemas[0]),
            lambda: PostgresStore(DSN, schema=schemas[1]),
        ),
        "postgres-async": (
            lambda: PostgresStore(DSN, schema=schemas[3], durable=False),
            lambda: PostgresStore(DSN, schema=schemas[4], durable=False),
        ),
    }
    rows: dict[str, Any] = {}
    try:
        for name, (make, make_load) in backends.items():
            gc.collect()
            cells = await _awaken(make, steps)
            growth = cells[str(SIZES[-1])]["median_ms"] / cells[str(SIZES[0])]["median_ms"]
            rows[name] = {
                "steps": cells,
                "growth_10k_over_10": growth,
                "load_10k_ms": await _load_10k(make_load),
            }
        lg: dict[str, Any] = {}
        if not os.environ.get("SKIP_LANGGRAPH"):
            for size in SIZES:
                # LangGraph's cost grows with H: fewer timed steps at large H keep the run short.
                lg_steps = max(10, min(steps, 3_000_000 // (size * 300 + 1) + 10))
                lg[str(size)] = await _langgraph(schemas[2], size, lg_steps)
    finally:
        _drop(*schemas)
    _print(rows, lg, server)
    report = {
        "when": datetime.now(UTC).isoformat(),
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "server": server,
        "steps_per_cell": steps,
        "durability": {
            "sqlite": "WAL, synchronous=NORMAL (survives a killed process)",
            "sqlite-full": "WAL, synchronous=FULL (fsync per commit)",
            "postgres": "one transaction per commit; server fsync/synchronous_commit as above",
            "postgres-async": "durable=False: synchronous_commit=off for the store's sessions",
            "lg-postgres": "AsyncPostgresSaver, autocommit writes; server settings as above",
        },
        "awaken": rows,
        "langgraph_postgres": lg,
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("store_postgres_quick.json" if args.quick else "store_postgres.json")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")


def _cell(stats: dict[str, float] | None) -> str:
    if not stats:
        return f"{'-':>17}"
    return f"{stats['median_ms']:>8.3f} ({stats['p90_ms']:>6.3f})"


def _print(rows: dict[str, Any], lg: dict[str, Any], server: dict[str, str]) -> None:
    print(
        f"PostgreSQL {server['server_version']}: fsync={server['fsync']}, "
        f"synchronous_commit={server['synchronous_commit']}, "
        f"wal_sync_method={server['wal_sync_method']}"
    )
    print("per-step commit cost, median ms (p90)")
    print("backend        " + "".join(f"{f'H={s:,}':>17}" for s in SIZES) + "   10k/10   load 10k")
    for name, row in rows.items():
        cells = "".join(_cell(row["steps"][str(s)]) for s in SIZES)
        growth, load = row["growth_10k_over_10"], row["load_10k_ms"]
        print(f"{name:<15}{cells}   {growth:>5.2f}x  {load:>6.1f} ms")
    if not lg or all(v is None for v in lg.values()):
        print("lg-postgres  (skipped: needs langgraph-checkpoint-postgres, in the bench env)")
        return
    growth = lg[str(SIZES[-1])]["median_ms"] / lg[str(SIZES[0])]["median_ms"]
    print(f"{'lg-postgres':<15}{''.join(_cell(lg[str(s)]) for s in SIZES)}   {growth:>5.2f}x")
    pg = rows["postgres"]["steps"]
    ratio = "".join(f"{lg[str(s)]['median_ms'] / pg[str(s)]['median_ms']:>16.1f}x" for s in SIZES)
    print(f"{'lg/postgres':<15}{ratio}")


if __name__ == "__main__":
    asyncio.run(main())
