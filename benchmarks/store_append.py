"""Store append cost: per-step checkpoint time vs. thread size, per backend, vs LangGraph.

For each backend (memory, file, sqlite) and history size H in (10, 1,000, 10,000
messages) a thread is seeded with H messages, then S steps are committed one
by one (round-robin over the three threads) exactly as the loop checkpoints a
tool step: an assistant message with one tool call, its tool result, and one
state batch (a counter plus one field merged into a COMMUTATIVE object).
Reported: median and p90 ms per step commit, the growth ratio
cost(10,000) / cost(10) (target <= 1.3), and the time to load a 10,000-message
thread in a fresh store object.

The LangGraph column saves the same step-by-step transcript through
``langgraph.checkpoint.sqlite.SqliteSaver`` (a ``StateGraph`` with an
``add_messages`` channel, one ``invoke`` per step, WAL as in awaken), at the
same history sizes; ``lg/aw`` is its median over awaken-SQLite's median.

Run: ``hatch run bench:python benchmarks/store_append.py [--quick]`` (LangGraph
needs ``langgraph`` and ``langgraph-checkpoint-sqlite``; without them its
column is skipped). Writes benchmarks/results/store_append.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

from awaken_runtime import Command, CommittedBatch, MergePolicy, Message, ToolCall
from awaken_runtime.stores import FileStore, InMemoryStore, ScopeBinding, SQLiteStore

try:  # LangGraph is installed only in the bench env
    from langgraph.graph.message import add_messages

    class LGState(TypedDict):
        """The LangGraph state: the transcript plus the same two state keys."""

        messages: Annotated[list[Any], add_messages]
        steps: int
        notes: dict[str, int]

    HAVE_LANGGRAPH = True
except ImportError:  # pragma: no cover
    HAVE_LANGGRAPH = False

SIZES = (10, 1_000, 10_000)
RESULTS = Path(__file__).with_name("results") / "store_append.json"


def _step(i: int) -> tuple[list[Message], list[CommittedBatch]]:
    call = ToolCall(id=f"call-{i}", name="lookup", arguments={"q": f"query {i}"})
    messages = [
        Message.assistant(f"step {i}", tool_calls=[call]),
        Message.tool(call.id, f"result {i}: " + "x" * 200, name="lookup"),
    ]
    batch = CommittedBatch(
        revision=i,
        phase="after_tool",
        entries=[
            ("runtime", Command.set("steps", i)),
            ("memory", Command.set("notes", {f"n{i}": i}, merge=MergePolicy.COMMUTATIVE)),
        ],
    )
    return messages, [batch]


async def _seed(store: Any, b: ScopeBinding, size: int) -> int:
    version, chunk = 0, 500
    for start in range(0, size, chunk):
        msgs = [
            Message.user(f"history {n}: " + "y" * 150)
            for n in range(start, min(size, start + chunk))
        ]
        version = await store.commit(b, version, msgs, [])
    return version


async def _awaken(make: Any, steps: int) -> dict[str, dict[str, float]]:
    """Per-step commit times for every history size, interleaved round-robin.

    Interleaving spreads machine noise (other processes, fsync latency spikes)
    evenly over the sizes, so the growth ratio measures the store, not the noise.
    """
    store = make()
    bindings = {size: ScopeBinding(f"thread-{size}", "p", "ns") for size in SIZES}
    versions = {size: await _seed(store, bindings[size], size) for size in SIZES}
    times: dict[int, list[float]] = {size: [] for size in SIZES}
    for i in range(1, steps + 1):
        for size in SIZES:
            messages, batches = _step(size + i)
            t0 = time.perf_counter()
            versions[size] = await store.commit(bindings[size], versions[size], messages, batches)
            times[size].append((time.perf_counter() - t0) * 1000)
    await store.close()
    return {str(size): _stats(times[size]) for size in SIZES}


def _stats(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"median_ms": statistics.median(times), "p90_ms": times[int(len(times) * 0.9)]}


async def _load_time(make: Any, size: int) -> float:
    store = make()
    b = ScopeBinding("load", "p", "ns")
    await _seed(store, b, size)
    reader = make() if not isinstance(store, InMemoryStore) else store
    t0 = time.perf_counter()
    snap = await reader.load(b)
    elapsed = (time.perf_counter() - t0) * 1000
    assert len(snap.messages) == size
    return elapsed


def lg_app(saver: Any) -> Any:
    """The one-node LangGraph graph both LangGraph benchmarks checkpoint through ``saver``."""
    from langgraph.graph import StateGraph

    def node(state: LGState) -> dict[str, Any]:
        return {}

    graph = StateGraph(LGState)
    graph.add_node("step", node)
    graph.set_entry_point("step")
    return graph.compile(checkpointer=saver)


def lg_history(size: int) -> dict[str, Any]:
    """The graph input that seeds a thread with ``size`` history messages."""
    from langchain_core.messages import HumanMessage

    history = [HumanMessage(f"history {n}: " + "y" * 150, id=f"h{n}") for n in range(size)]
    return {"messages": history, "steps": 0, "notes": {}}


def lg_step(k: int, notes: dict[str, int]) -> dict[str, Any]:
    """The graph input of step ``k`` (the same step as ``_step``); adds to ``notes``."""
    from langchain_core.messages import AIMessage, ToolMessage

    ai = AIMessage(
        f"step {k}",
        id=f"a{k}",
        tool_calls=[{"id": f"call-{k}", "name": "lookup", "args": {"q": f"query {k}"}}],
    )
    tool = ToolMessage(f"result {k}: " + "x" * 200, tool_call_id=f"call-{k}", id=f"t{k}")
    notes[f"n{k}"] = k
    return {"messages": [ai, tool], "steps": k, "notes": dict(notes)}


def _langgraph(db: Path, size: int, steps: int) -> dict[str, float] | None:
    if not HAVE_LANGGRAPH:
        return None
    try:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None

    conn = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    app = lg_app(SqliteSaver(conn))
    config = {"configurable": {"thread_id": f"lg-{size}"}}
    app.invoke(lg_history(size), config)
    notes: dict[str, int] = {}
    times = []
    for i in range(1, steps + 1):
        step = lg_step(size + i, notes)
        t0 = time.perf_counter()
        app.invoke(step, config)
        times.append((time.perf_counter() - t0) * 1000)
    conn.close()
    return _stats(times)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    parser.add_argument("--steps", type=int, default=300, help="timed step commits per cell")
    args = parser.parse_args()
    steps = 30 if args.quick else args.steps
    tmp = Path(tempfile.mkdtemp(prefix="awaken-bench-"))
    backends: dict[str, Any] = {
        "memory": lambda: InMemoryStore(),
        "file": lambda: FileStore(tmp / "files"),
        "sqlite": lambda: SQLiteStore(tmp / "awaken.db"),
    }
    rows: dict[str, Any] = {}
    for name, make in backends.items():
        gc.collect()
        cells = await _awaken(make, steps)
        growth = cells[str(SIZES[-1])]["median_ms"] / cells[str(SIZES[0])]["median_ms"]
        load = await _load_time(
            lambda m=make, n=name: m() if n != "file" else FileStore(tmp / f"load-{n}"), 10_000
        )
        rows[name] = {"steps": cells, "growth_10k_over_10": growth, "load_10k_ms": load}
    lg: dict[str, Any] = {}
    for size in SIZES:
        lg_steps = max(10, min(steps, 3_000_000 // (size * 300 + 1) + 10))
        lg[str(size)] = _langgraph(tmp / "langgraph.db", size, lg_steps)
    _print(rows, lg)
    report = {
        "when": datetime.now(UTC).isoformat(),
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "steps_per_cell": steps,
        "awaken": rows,
        "langgraph_sqlite": lg,
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {RESULTS}")


def _print(rows: dict[str, Any], lg: dict[str, Any]) -> None:
    head = "backend      " + "".join(f"{f'H={s:,}':>16}" for s in SIZES) + "   10k/10   load 10k"
    print("per-step checkpoint cost, median ms (p90)")
    print(head)
    for name, row in rows.items():
        cells = "".join(
            f"{row['steps'][str(s)]['median_ms']:>8.3f} ({row['steps'][str(s)]['p90_ms']:.3f})"
            for s in SIZES
        )
        print(
            f"{name:<13}{cells}   {row['growth_10k_over_10']:>5.2f}x  {row['load_10k_ms']:>7.1f} ms"
        )
    if all(v is None for v in lg.values()):
        print("langgraph    (skipped: install langgraph and langgraph-checkpoint-sqlite)")
        return
    cells = "".join(
        f"{lg[str(s)]['median_ms']:>8.3f} ({lg[str(s)]['p90_ms']:.3f})"
        if lg[str(s)]
        else f"{'-':>16}"
        for s in SIZES
    )
    growth = lg[str(SIZES[-1])]["median_ms"] / lg[str(SIZES[0])]["median_ms"]
    print(f"{'lg-sqlite':<13}{cells}   {growth:>5.2f}x")
    ratios = "".join(
        f"{lg[str(s)]['median_ms'] / rows['sqlite']['steps'][str(s)]['median_ms']:>15.1f}x"
        for s in SIZES
    )
    print(f"{'lg/aw-sqlite':<13}{ratios}")


if __name__ == "__main__":
    asyncio.run(main())
