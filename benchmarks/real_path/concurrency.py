"""Concurrent runs on the durable stores: CPU per inference at N = 1 to 1,000 runs at once.

Each run is two inferences (a tool call, then the answer after the tool
result), and the model awaits 10 ms before it answers, like a remote model
would. N runs start together on N new threads; runs are repeated in rounds
until a setting has seen at least ``MIN_RUNS`` runs. Measured for awaken on
the in-memory, SQLite and file stores (each run takes its thread's lease,
loads, checkpoints each step and releases, as in production) and for
LangGraph's prebuilt ReAct agent with its SQLite checkpointer
(``AsyncSqliteSaver``) as the reference, interleaved per N.

CPU is ``resource.getrusage`` (user + system, every thread of the process)
per inference, the median of the repetitions; ``inf/s`` is inferences per
wall second; ``gc us/inference`` is the part of that CPU the cyclic collector
spent (part of the figure, not apart from it): at N=1,000 the live runs' objects
outlive the young generations, and the full collections they trigger walk the
whole heap, so it is most of what grows with N. Each cell starts right after a
full collection, so it pays for the collections its own work triggers. Target: CPU per inference at
N=1,000 within 1.5x of N=10 for every store.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import statistics
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from _section import cpu_seconds, emit, now, parse

import awaken_runtime as aw
from awaken_runtime.stores import FileStore, InMemoryStore, SQLiteStore

NS = (1, 10, 100, 1_000)
MIN_RUNS = 200
DELAY = 0.010
_calls = itertools.count()
STORES = ("memory", "sqlite", "file")


def lookup(q: str) -> str:
    """Look an order up.

    Args:
        q: the order
    """
    return f"order {q}: shipped"


class RemoteModel:
    """An executor that answers after 10 ms: a tool call first, the answer after its result."""

    async def stream(
        self, request: aw.InferenceRequest
    ) -> AsyncIterator[aw.StreamDelta | aw.InferenceResponse]:
        await asyncio.sleep(DELAY)
        if request.messages[-1].role == "tool":
            yield aw.InferenceResponse(text="It has shipped.")
        else:
            call = aw.ToolCall(id=f"call-{next(_calls)}", name="lookup", arguments={"q": "42"})
            yield aw.InferenceResponse(tool_calls=[call], finish_reason="tool_calls")


def _store(kind: str, root: Path) -> Any:
    if kind == "sqlite":
        return SQLiteStore(root / "a.db")
    if kind == "file":
        return FileStore(root / "files")
    return InMemoryStore()


def awaken_factory(kind: str) -> Callable[[Path], Awaitable[tuple[Any, Any]]]:
    async def make(root: Path) -> tuple[Any, Any]:
        store = _store(kind, root)
        runtime = (
            aw.AgentRuntimeBuilder(discover=False)
            .with_tool(aw.tool(lookup))
            .with_model(aw.ModelSpec(id="m", provider="remote", model="remote"))
            .with_provider("remote", RemoteModel())
            .with_store(store)
            .with_agent_spec(aw.AgentConfig(id="a", model_binding="m", tool_ids=["lookup"]))
            .build()
        )
        runtime.resolve("a")

        async def run(tid: str) -> None:
            state = await runtime.run("a", "Where is order 42?", thread_id=tid)
            assert state.final_text == "It has shipped.", state.end_cause

        async def close() -> None:
            await store.close()

        return run, close

    return make


def langgraph_factory() -> Callable[[Path], Awaitable[tuple[Any, Any]]]:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool as lc_tool
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    with warnings.catch_warnings():  # create_react_agent is deprecated in langgraph 1.x
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    class Remote(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "remote"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, **kw: Any) -> ChatResult:
            raise NotImplementedError

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            await asyncio.sleep(DELAY)
            if isinstance(messages[-1], ToolMessage):
                out = AIMessage("It has shipped.")
            else:
                call = {"id": f"call-{next(_calls)}", "name": "lookup", "args": {"q": "42"}}
                out = AIMessage("", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=out)])

    async def make(root: Path) -> tuple[Any, Any]:
        cm = AsyncSqliteSaver.from_conn_string(str(root / "lg.db"))
        saver = await cm.__aenter__()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = create_react_agent(Remote(), [lc_tool(lookup)], checkpointer=saver)

        async def run(tid: str) -> None:
            config: Any = {"configurable": {"thread_id": tid}}
            out = await graph.ainvoke({"messages": [HumanMessage("Where is order 42?")]}, config)
            assert out["messages"][-1].content == "It has shipped."

        async def close() -> None:
            await cm.__aexit__(None, None, None)

        return run, close

    return make


class _Collector:
    """The cyclic collector's CPU so far (it runs on the thread that triggers it)."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._start = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        clock = time.thread_time()
        if phase == "start":
            self._start = clock
        else:
            self.spent += clock - self._start


COLLECTOR = _Collector()


async def _measure(make: Any, n: int, runs: int, tag: str) -> tuple[float, float, float]:
    """(CPU us per inference, inferences per wall second, the collector's CPU us per
    inference) of ``runs`` runs, ``n`` at once."""
    with tempfile.TemporaryDirectory() as tmp:
        run, close = await make(Path(tmp))
        await run(f"{tag}-warm")  # imports, caches and the store's files exist before timing
        # Each cell starts from the same collector state: a full collection owed to the cell
        # before (another implementation's garbage) does not land in this one's window.
        gc.collect()
        cpu, wall, collector, count = cpu_seconds(), now(), COLLECTOR.spent, 0
        while count < runs:
            await asyncio.gather(*(run(f"{tag}-{count + i}") for i in range(n)))
            count += n
        cpu, wall = cpu_seconds() - cpu, now() - wall
        collector = COLLECTOR.spent - collector
        await close()
    inferences = 2 * count
    return cpu / inferences * 1e6, inferences / wall, collector / inferences * 1e6


async def main_async(quick: bool) -> tuple[list[list[Any]], list[tuple[str, bool]], list[str]]:
    impls: dict[str, Any] = {f"awaken {k}": awaken_factory(k) for k in STORES}
    notes = []
    try:
        impls["langgraph sqlite"] = langgraph_factory()
    except ImportError as exc:  # pragma: no cover - the bench env has LangGraph
        notes.append(f"LangGraph skipped: {exc}")
    ns = (1, 10, 100) if quick else NS
    reps = 1 if quick else 3
    min_runs = 20 if quick else MIN_RUNS
    cpu: dict[tuple[str, int], list[float]] = {}
    rate: dict[tuple[str, int], list[float]] = {}
    collected: dict[tuple[str, int], list[float]] = {}
    for rep in range(reps):
        for n in ns:
            names = list(impls) if rep % 2 == 0 else list(reversed(impls))
            for name in names:
                us, per_s, gc_us = await _measure(impls[name], n, max(n, min_runs), f"r{rep}-{n}")
                cpu.setdefault((name, n), []).append(us)
                rate.setdefault((name, n), []).append(per_s)
                collected.setdefault((name, n), []).append(gc_us)
    rows: list[list[Any]] = []
    for name in impls:
        for n in ns:
            rows.append(
                [
                    name,
                    n,
                    statistics.median(cpu[(name, n)]),
                    statistics.median(rate[(name, n)]),
                    statistics.median(collected[(name, n)]),
                ]
            )
    checks = []
    top = ns[-1]
    for name in impls:
        if name.startswith("awaken"):
            ratio = statistics.median(cpu[(name, top)]) / statistics.median(cpu[(name, 10)])
            checks.append(
                (f"{name}: CPU/inference at N={top} is {ratio:.2f}x N=10 (<= 1.5x)", ratio <= 1.5)
            )
    lg = "langgraph sqlite"
    if lg in impls:
        for kind in ("sqlite", "file"):
            ours = statistics.median(cpu[(f"awaken {kind}", top)])
            theirs = statistics.median(cpu[(lg, top)])
            notes.append(
                f"N={top}: LangGraph+SQLite CPU/inference is {theirs / ours:.1f}x awaken {kind}"
            )
    return rows, checks, notes


def main() -> None:
    args = parse(__doc__)
    rows, checks, notes = asyncio.run(main_async(args.quick))
    emit(
        args,
        title="concurrent runs (2 inferences each, model awaits 10 ms): CPU per inference",
        columns=["implementation", "N", "CPU us/inference", "inf/s", "gc us/inference"],
        rows=rows,
        checks=checks,
        notes=notes,
    )


if __name__ == "__main__":
    main()
