"""Loop overhead: per-step cost of an agent run, three implementations side by side.

Each run is S tool-calling steps (one no-op tool call each) then a final answer,
on a thread already holding H messages (alternating user/assistant text):

* bare:      the floor; a plain async loop over a list of dicts that asks a
             scripted "model" coroutine for the next turn and calls the tool
             function directly (no validation, no persistence);
* awaken:    ``Runtime.run`` with ``ScriptedExecutor`` and an ``@tool`` no-op; the
             history is committed to the ``InMemoryStore`` first, and the run
             checkpoints every step there;
* langgraph: ``langgraph.prebuilt.create_react_agent`` with a fake chat model
             (``FakeMessagesListChatModel`` + ``bind_tools``), the history in the
             input state, no checkpointer.

Per-step cost = wall time of the run / model calls (S + 1). Setup (building the
runtime or graph, seeding the history) is not timed. For each S, all (implementation,
H) pairs run interleaved round-robin; each repeats until it has --min-reps samples
and has run for --budget seconds (or reached --max-reps). Medians are reported.

Run: ``hatch run bench:loop [--quick] [--no-langgraph]``. Writes
benchmarks/results/loop_overhead.json (loop_overhead_quick.json with --quick).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import awaken_runtime as aw

RESULTS = Path(__file__).resolve().parent / "results"
INSTRUCTIONS = "You are a helpful assistant. Use tools when needed."
ORDER = "order 4471"
QUESTION = f"Please look up the status of {ORDER}."
ANSWER = "Order 4471 shipped yesterday and arrives on Friday."
EXCHANGES = [
    ("Can you summarise Monday's meeting?", "The team will ship the beta on the 14th."),
    ("What's the weather in Lisbon this weekend?", "Mostly sunny, around 24C, showers Sunday."),
    ("Which API version did we pin?", "v2.3 of the payments API; v2.4 is still in preview."),
    ("How do I rotate the staging DB password?", "Use the secrets console, then restart pods."),
]

Run = Callable[[], Awaitable[int]]  # one timed run; returns how many model calls it made
Prepare = Callable[[int, int], Awaitable[Run]]  # (S, H) -> a fresh, ready-to-time run


@cache
def history(h: int) -> tuple[tuple[str, str], ...]:
    """``h`` alternating (role, text) pairs, starting with a user message."""
    return tuple(
        ("user" if i % 2 == 0 else "assistant", EXCHANGES[(i // 2) % 4][i % 2]) for i in range(h)
    )


def noop(q: str) -> str:
    """Look something up (does nothing).

    Args:
        q: what to look up
    """
    return "ok"


async def bare_prepare(s: int, h: int) -> Run:
    """(1) The floor: a list of dicts, a canned-turn coroutine, a direct tool call."""
    tools: dict[str, Callable[..., str]] = {"noop": noop}
    calls = [{"id": f"call_{i}", "name": "noop", "arguments": {"q": ORDER}} for i in range(s)]
    turns = [{"role": "assistant", "content": None, "tool_calls": [c]} for c in calls]
    turns.append({"role": "assistant", "content": ANSWER, "tool_calls": None})
    messages: list[dict[str, Any]] = [{"role": r, "content": t} for r, t in history(h)]
    messages.append({"role": "user", "content": QUESTION})
    cursor = iter(turns)

    async def model(_messages: list[dict[str, Any]]) -> dict[str, Any]:
        return next(cursor)

    async def run() -> int:
        n = 0
        while True:
            turn = await model(messages)
            n += 1
            messages.append(turn)
            if not turn["tool_calls"]:
                return n
            for call in turn["tool_calls"]:
                out = tools[call["name"]](**call["arguments"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": out})

    return run


AWAKEN_NOOP = aw.tool(noop)


@cache
def awaken_seed(h: int) -> tuple[aw.Message, ...]:
    return tuple(aw.Message(role=r, content=t) for r, t in history(h))


def otel_observer() -> Any:
    """``awaken_otel.GenAITelemetry`` on SDK providers that keep nothing: every span is
    built, attributed and handed to a span processor, every metric recorded; nothing
    is exported (the cost measured is the instrumentation's, not a backend's)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    from awaken_otel import GenAITelemetry

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(Drop()))
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return GenAITelemetry(tracer_provider, meters)


async def awaken_prepare(s: int, h: int, observer: Any = None) -> Run:
    """(2) This runtime: a fresh runtime whose store already holds the thread.

    ``observer``: a ``RunObserver`` for the run (the ``awaken+otel`` column)."""
    turns: list[aw.ScriptedTurn | str] = [
        aw.ScriptedTurn.call("noop", {"q": ORDER}) for _ in range(s)
    ]
    executor = aw.ScriptedExecutor([*turns, ANSWER])
    executor.record_requests = False
    agent = aw.AgentConfig(
        id="a", instructions=INSTRUCTIONS, model_binding="m", tool_ids=["noop"], max_steps=s + 10
    )
    runtime = (
        aw.AgentRuntimeBuilder(discover=False)
        .with_tool(AWAKEN_NOOP)
        .with_model(aw.ModelSpec(id="m", provider="scripted", model="scripted"))
        .with_provider("scripted", executor)
        .with_agent_spec(agent)
        .build()
    )
    runtime.observer = observer
    runtime.resolve("a")  # resolution is cached per runtime; an app builds it once
    if h:
        binding = aw.ScopeBinding("t", "default", "default")
        await runtime.store.commit(binding, 0, awaken_seed(h), [])

    async def run() -> int:
        state = await runtime.run("a", QUESTION, thread_id="t")
        assert state.final_text == ANSWER, state.end_cause
        return executor.calls

    return run


def langgraph_prepare_factory() -> Prepare:
    """(3) LangGraph's prebuilt ReAct agent; imported lazily (``--no-langgraph``)."""
    import warnings

    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
    from langchain_core.outputs import ChatResult
    from langchain_core.tools import tool as lc_tool

    with warnings.catch_warnings():  # create_react_agent is deprecated in langgraph 1.x
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    class FakeToolModel(FakeMessagesListChatModel):
        """Cycles through canned AIMessages; ``bind_tools`` ignores the tools."""

        calls: int = 0

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        async def _agenerate(  # natively async: no thread-pool hop per call
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            self.calls += 1
            return self._generate(messages, stop, None, **kwargs)

    lc_noop = lc_tool(noop)

    @cache
    def graph_for(s: int) -> tuple[Any, FakeToolModel]:
        # One graph per S: without a checkpointer runs share no state; the model cycles.
        calls = [[{"id": f"call_{i}", "name": "noop", "args": {"q": ORDER}}] for i in range(s)]
        responses: list[Any] = [AIMessage("", tool_calls=c) for c in calls]
        model = FakeToolModel(responses=[*responses, AIMessage(ANSWER)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_react_agent(model, [lc_noop], prompt=INSTRUCTIONS), model

    @cache
    def seed(h: int) -> tuple[AnyMessage, ...]:
        kinds = {"user": HumanMessage, "assistant": AIMessage}
        return tuple(kinds[r](t, id=f"h{i}") for i, (r, t) in enumerate(history(h)))

    async def prepare(s: int, h: int) -> Run:
        graph, model = graph_for(s)
        inputs = {"messages": [*seed(h), HumanMessage(QUESTION)]}
        config: Any = {"recursion_limit": 2 * s + 10}

        async def run() -> int:
            before = model.calls
            out = await graph.ainvoke(inputs, config)
            assert out["messages"][-1].content == ANSWER
            return model.calls - before

        return run

    return prepare


async def measure(
    impls: dict[str, Prepare], s: int, histories: tuple[int, ...], args: argparse.Namespace
) -> dict[tuple[str, int], list[float]]:
    """us/step samples for every (implementation, H) at one S, interleaved round-robin.

    Interleaving across H as well keeps the H-scaling ratios fair on a busy machine.
    """
    keys = [(name, h) for h in histories for name in impls]
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in keys}
    spent = dict.fromkeys(keys, 0.0)
    for name, h in keys:  # warm-up, not recorded
        await (await impls[name](s, h))()
    while todo := [
        key
        for key, xs in samples.items()
        if len(xs) < args.min_reps or (spent[key] < args.budget and len(xs) < args.max_reps)
    ]:
        for name, h in todo:
            run = await impls[name](s, h)
            gc.collect()
            t0 = time.perf_counter()
            calls = await run()
            elapsed = time.perf_counter() - t0
            assert calls == s + 1, f"{name}: {calls} model calls, expected {s + 1}"
            spent[name, h] += elapsed
            samples[name, h].append(elapsed / calls * 1e6)
    return samples


def import_times(reps: int) -> dict[str, float]:
    """Median wall ms of a fresh interpreter importing each module set (interleaved)."""
    codes = {
        "awaken_runtime": "import awaken_runtime",
        "baseline": "import asyncio, pluggy; from pydantic import BaseModel, TypeAdapter",
    }
    times: dict[str, list[float]] = {k: [] for k in codes}
    for i in range(reps + 1):  # round 0 only warms the file cache
        for name, code in codes.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            if i:
                times[name].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def check_targets(rows: list[dict[str, Any]], imp: dict[str, float]) -> list[tuple[str, Any]]:
    """The issue's targets as (description, True/False, or None when skipped)."""
    med = {(r["steps"], r["history"]): r["us_per_step"] for r in rows}
    found: list[tuple[str, Any]] = []
    if all("langgraph" in m for m in med.values()):
        worst = min(m["langgraph"] / m["awaken"] for m in med.values())
        text = f"awaken >= 10x faster/step than LangGraph, every cell ({worst:.1f}x)"
        found.append((text, worst >= 10))
    else:
        found.append(("awaken >= 10x faster/step than LangGraph (skipped)", None))
    for s in sorted({s for s, _h in med}):
        zero, big = med[(s, 0)], med[(s, 10_000)]
        r0, rh = zero["awaken"] / zero["bare"], big["awaken"] / zero["awaken"]
        found.append((f"S={s}: awaken <= 30x bare at 0 history ({r0:.1f}x)", r0 <= 30))
        found.append((f"S={s}: awaken at 10,000 history <= 1.3x at 0 ({rh:.2f}x)", rh <= 1.3))
    ratio = imp["awaken_runtime"] / imp["baseline"]
    found.append((f"import awaken_runtime <= 2x baseline ({ratio:.2f}x)", ratio <= 2))
    return found


def print_report(rows: list[dict[str, Any]], imp: dict[str, float], reps: int) -> None:
    head = f"{'S':>4} {'history':>8} | {'bare':>8} {'awaken':>8} {'langgraph':>10} | "
    head += f"{'aw/bare':>8} {'lg/aw':>7} | reps b/a/l"
    print(f"\nper-step cost, median us/step (run wall time / model calls)\n{head}")
    print("-" * len(head))
    for r in rows:
        m, n = r["us_per_step"], r["reps"]
        lg = f"{m['langgraph']:>10.1f}" if "langgraph" in m else f"{'skipped':>10}"
        lg_aw = f"{m['langgraph'] / m['awaken']:>6.1f}x" if "langgraph" in m else f"{'-':>7}"
        counts = "/".join(str(n.get(k, "-")) for k in ("bare", "awaken", "langgraph"))
        row = f"{r['steps']:>4} {r['history']:>8} | {m['bare']:>8.2f} {m['awaken']:>8.1f} {lg}"
        print(f"{row} | {m['awaken'] / m['bare']:>7.1f}x {lg_aw} | {counts}")
    if any("awaken+otel" in r["us_per_step"] for r in rows):
        print("\ntracing on (awaken-otel, SDK providers, nothing exported), median us/step")
        print(f"{'S':>4} {'history':>8} | {'awaken':>8} {'+otel':>8} | {'extra':>7} {'ratio':>6}")
        for r in rows:
            m = r["us_per_step"]
            a, o = m["awaken"], m["awaken+otel"]
            cell = f"{r['steps']:>4} {r['history']:>8} | {a:>8.1f} {o:>8.1f}"
            print(f"{cell} | {o - a:>7.1f} {o / a:>5.2f}x")
    a, b = imp["awaken_runtime"], imp["baseline"]
    print(f"\nimport awaken_runtime: {a:.1f} ms (median of {reps}, fresh interpreter)")
    print(f"import asyncio, pluggy, pydantic (baseline): {b:.1f} ms -> {a / b:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: S=5, few repetitions")
    ap.add_argument("--no-langgraph", action="store_true", help="skip LangGraph")
    ap.add_argument(
        "--otel", action="store_true", help="add awaken with awaken-otel tracing and metrics on"
    )
    ap.add_argument("--budget", type=float, help="seconds per implementation and cell")
    ap.add_argument("--min-reps", type=int, help="minimum samples per implementation and cell")
    ap.add_argument("--max-reps", type=int, help="maximum samples per implementation and cell")
    ap.add_argument("--out", type=Path, help="JSON output path")
    args = ap.parse_args()
    quick = args.quick
    args.budget = args.budget if args.budget is not None else (0.2 if quick else 3.0)
    args.min_reps = args.min_reps or (3 if quick else 7)
    args.max_reps = args.max_reps or (20 if quick else 300)
    import_reps = 3 if quick else 7
    out = args.out or RESULTS / f"loop_overhead{'_quick' if quick else ''}.json"

    impls: dict[str, Prepare] = {"bare": bare_prepare, "awaken": awaken_prepare}
    if args.otel:
        observer = otel_observer()  # one per process, as an application would have
        impls["awaken+otel"] = lambda s, h: awaken_prepare(s, h, observer)
    if args.no_langgraph:
        print("LangGraph: skipped (--no-langgraph)")
    else:
        try:
            impls["langgraph"] = langgraph_prepare_factory()
        except ImportError as exc:
            sys.exit(f"no LangGraph ({exc}); run `hatch run bench:loop` or --no-langgraph")

    async def run_all() -> list[dict[str, Any]]:
        rows = []
        histories = (0, 1_000, 10_000)
        for s in (5,) if quick else (10, 100):
            samples = await measure(impls, s, histories, args)
            for h in histories:
                cell = {name: samples[name, h] for name in impls}
                med = {n: statistics.median(xs) for n, xs in cell.items()}
                best = {n: min(xs) for n, xs in cell.items()}
                reps = {n: len(xs) for n, xs in cell.items()}
                rows.append(
                    dict(steps=s, history=h, us_per_step=med, min_us_per_step=best, reps=reps)
                )
                done = "  ".join(f"{n}={v:.1f}us" for n, v in med.items())
                print(f"  S={s:<3} H={h:<6} {done}", file=sys.stderr, flush=True)
        return rows

    here = Path(aw.__file__).parent  # which runtime is measured, and at which commit
    git = ["git", "-C", str(here), "describe", "--always", "--dirty"]
    commit = subprocess.run(git, capture_output=True, text=True).stdout.strip() or None
    load_before = os.getloadavg()
    if load_before[0] > 0.5 * (os.cpu_count() or 1):
        print(f"warning: load average {load_before[0]:.1f}; timings will be noisy", file=sys.stderr)
    rows = asyncio.run(run_all())
    imports = import_times(import_reps)
    print_report(rows, imports, import_reps)
    checks = check_targets(rows, imports)
    print("\ntargets:")
    for text, ok in checks:
        print(f"  [{'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}] {text}")

    def dist(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    report = {
        "benchmark": "loop_overhead",
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "loadavg_1m_before_after": [load_before[0], os.getloadavg()[0]],
        },
        "versions": {d: dist(d) for d in ("pydantic", "langgraph", "langchain-core")},
        "awaken_runtime": {"path": str(here), "git": commit},
        "settings": {k: getattr(args, k) for k in ("quick", "budget", "min_reps", "max_reps")}
        | {"import_reps": import_reps},
        "cells": rows,
        "import_ms": imports,
        "targets": [{"target": t, "pass": ok} for t, ok in checks],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
