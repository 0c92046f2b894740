"""Memory extension benchmark: retrieval latency, index updates, embedders.

* retrieval: top-5 search over N in {1,000, 10,000, 100,000} random unit
  vectors of dim 384, both the bare ``VectorIndex.search`` and the plugin's
  full path ``MemoryBank.search`` (sync check + verification of the hits
  against the records in state). Median of many queries.
* update: cost of indexing one new memory once its write is committed (the
  O(new) path: the vector computed by ``remember`` is reused) at each N, with
  and without the on-disk cache write (the state engine's own commit cost is
  not included); plus a restart rebuild of 10,000 memories from the cache
  (no embedding).
* embedders: throughput (sentences/s) of each local embedder (hashing,
  numpy MiniLM when its weights are installed) on the labeled sentences, and
  recall@5 on ``benchmarks/data/memory_pairs.json``: every memory is indexed,
  each paraphrased query must find its memory in the top 5. Plus the
  calibration of ``min_score``: hit@5 at each threshold, and the largest one
  that loses at most 0.01 of hit@5 (what each embedder's
  ``default_min_score`` holds).
* latency: one query embedded through the plugin's path
  (``MemoryBank.embed``: a worker thread of the bounded embedding pool), p50
  and p95 over the paraphrase set's queries, with MiniLM's default (BLAS
  limited to one thread per embed) and with BLAS left alone. Target: p50
  under 20 ms on an otherwise idle 2-core machine.
* event loop: 20 runs started at once, each a new user turn on a profile
  holding the 165 memories (so each embeds its query and injects memories),
  while a ticker measures how late the loop wakes it (every 5 ms). Target:
  no gap over 50 ms.

Run: ``hatch run python benchmarks/memory.py [--quick] [--only SECTION ...]``.
Prints a table and writes benchmarks/results/memory.json (memory_quick.json
with --quick; memory_<sections>.json with --only).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from awaken_ext_memory import (
    EmbedderUnavailable,
    EmbeddingCache,
    HashingEmbedder,
    MemoryBank,
    MemoryConfig,
    MemoryPlugin,
    MiniLMEmbedder,
    VectorIndex,
    default_min_score,
    text_digest,
)
from awaken_runtime import Scope, ScriptedTurn
from awaken_runtime.testing import scripted_runtime

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PAIRS = HERE / "data" / "memory_pairs.json"
DIM = 384
KEY = (Scope.PROFILE, "bench")
NOW = "2025-01-01T00:00:00Z"


def _timed_ms(fn: Callable[[], Any], reps: int) -> tuple[float, float]:
    """(median, min) wall time of ``fn`` in ms, with the garbage collector paused."""
    samples = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return statistics.median(samples) * 1e3, min(samples) * 1e3


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM), dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def _record(mid: str, text: str) -> dict[str, Any]:
    return {
        "id": mid,
        "text": text,
        "kind": "fact",
        "tags": [],
        "created_at": NOW,
        "updated_at": NOW,
        "source": {"via": "api"},
        "embedder": "bench",
        "deleted": False,
    }


class _Fixed:
    """An embedder that returns precomputed vectors (so timings exclude embedding)."""

    blocking = False
    id = "bench-fixed"
    dim = DIM

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def embed(self, texts: list[str]) -> np.ndarray:
        return _unit(self.rng, len(texts))


def _retrieval_row(n: int, rng: np.random.Generator, reps: int) -> dict[str, Any]:
    ids = [f"m{i}" for i in range(n)]
    index = VectorIndex(DIM)
    index.upsert(ids, _unit(rng, n))
    queries = _unit(rng, reps)
    it = iter(queries)
    bare, bare_min = _timed_ms(lambda: index.search(next(it), 5), reps)
    bank = MemoryBank(_Fixed(rng))
    records = {mid: _record(mid, f"memory {mid}") for mid in ids}
    owner = bank._owner(KEY)  # adopt the index built above instead of embedding n texts
    owner.index = index
    owner.seen = dict(records)
    owner.synced = records
    owner.built = True
    it2 = iter(queries)
    loop = asyncio.new_event_loop()
    full, full_min = _timed_ms(
        lambda: loop.run_until_complete(bank.search(KEY, records, next(it2), 5)), reps
    )
    loop.close()
    return {
        "memories": n,
        "dim": DIM,
        "index_search_ms": bare,
        "index_search_min_ms": bare_min,
        "bank_search_ms": full,
        "bank_search_min_ms": full_min,
    }


def retrieval(sizes: list[int], reps: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    return [_retrieval_row(n, rng, reps) for n in sizes]


def _update_us(n: int, adds: int, use_cache: bool, rng: np.random.Generator) -> float:
    """Median cost of indexing one committed new memory into an index of ``n``."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(tmp) if use_cache else None
        bank = MemoryBank(_Fixed(rng), cache)
        ids = [f"m{i}" for i in range(n)]
        records: dict[str, Any] = {mid: _record(mid, mid) for mid in ids}
        loop = asyncio.new_event_loop()
        owner = bank._owner(KEY)
        owner.index.upsert(ids, _unit(rng, n))
        owner.seen, owner.synced, owner.built = dict(records), records, True
        samples = []
        gc.collect()
        gc.disable()
        for i in range(adds):
            mid = f"new{i}"
            value = _record(mid, f"new memory {i}")
            bank.stage(KEY, mid, value, _unit(rng, 1)[0])  # what remember() does
            records[mid] = value
            # A new value object, as after a commit, without timing the engine's copy.
            committed = MappingProxyType(records)
            start = time.perf_counter()
            loop.run_until_complete(bank.sync(KEY, committed))
            samples.append(time.perf_counter() - start)
        gc.enable()
        loop.close()
        if cache is not None:
            cache.close()
    return statistics.median(samples) * 1e6


def update_cost(sizes: list[int], adds: int, rebuild_n: int) -> dict[str, Any]:
    rng = np.random.default_rng(11)
    out: dict[str, Any] = {
        "adds": adds,
        "per_memory_us": [
            {
                "memories": n,
                "no_cache_us": _update_us(n, adds, False, rng),
                "disk_cache_us": _update_us(n, adds, True, rng),
            }
            for n in sizes
        ],
    }
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(tmp)
        ids = [f"r{i}" for i in range(rebuild_n)]
        records = {mid: _record(mid, f"text {mid}") for mid in ids}
        cache.put_many(
            "bench-fixed", ids, [text_digest(f"text {m}") for m in ids], _unit(rng, rebuild_n)
        )
        fresh = MemoryBank(_Fixed(rng), cache)
        loop = asyncio.new_event_loop()
        start = time.perf_counter()
        loop.run_until_complete(fresh.sync(KEY, records))
        out["rebuild_from_cache_memories"] = rebuild_n
        out["rebuild_from_cache_ms"] = (time.perf_counter() - start) * 1e3
        out["rebuild_embedded_texts"] = fresh.embedded_texts
        loop.close()
        cache.close()
    return out


def embedders(quick: bool) -> list[dict[str, Any]]:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    memories = [p["memory"] for p in pairs]
    queries = [p["query"] for p in pairs]
    candidates: list[tuple[str, Callable[[], Any]]] = [
        ("hashing", lambda: HashingEmbedder(DIM)),
        ("minilm (numpy)", MiniLMEmbedder),
    ]
    rows = []
    for name, make in candidates:
        try:
            embedder = make()
        except EmbedderUnavailable as exc:
            rows.append({"embedder": name, "skipped": str(exc)})
            continue
        embedder.embed(memories[:4])  # load weights, warm caches
        texts = memories + queries
        rounds = 1 if quick or name != "hashing" else 5
        start = time.perf_counter()
        for _ in range(rounds):
            embedder.embed(texts)
        throughput = len(texts) * rounds / (time.perf_counter() - start)
        index = VectorIndex(embedder.dim)
        mv = embedder.embed(memories)
        index.upsert([str(i) for i in range(len(memories))], mv)
        qv = embedder.embed(queries)
        hits = [str(i) in {mid for mid, _ in index.search(qv[i], 5)} for i in range(len(queries))]
        top1 = [index.search(qv[i], 1)[0][0] == str(i) for i in range(len(queries))]
        rows.append(
            {
                "embedder": name,
                "id": embedder.id,
                "sentences_per_s": throughput,
                "pairs": len(pairs),
                "recall_at_5": sum(hits) / len(hits),
                "recall_at_1": sum(top1) / len(top1),
                "calibration": _calibration(mv, qv, hits),
                "default_min_score": default_min_score(embedder),
            }
        )
    return rows


def _calibration(mv: np.ndarray, qv: np.ndarray, hits: list[bool]) -> dict[str, Any]:
    """hit@5 when a hit also needs cosine >= t, for t on a 0.01 grid; and the largest
    t that loses at most 0.01 of hit@5 against no threshold."""
    mv = mv / np.linalg.norm(mv, axis=1, keepdims=True)
    qv = qv / np.linalg.norm(qv, axis=1, keepdims=True)
    true = np.einsum("ij,ij->i", qv, mv)
    in5 = np.array(hits)
    base = float(in5.mean())
    grid = {f"{t / 100:.2f}": float((in5 & (true >= t / 100)).mean()) for t in range(0, 50)}
    best = max(float(t) for t, hit in grid.items() if base - hit <= 0.01 + 1e-9)
    return {"hit_at_5_by_threshold": grid, "calibrated": best}


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(quick: bool) -> list[dict[str, Any]]:
    """Single-query embedding latency through MemoryBank.embed (the worker pool)."""
    queries = [p["query"] for p in json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]]
    if quick:
        queries = queries[:30]
    rows = []
    for label, threads in (("minilm, BLAS 1 thread (default)", 1), ("minilm, BLAS as is", None)):
        try:
            embedder = MiniLMEmbedder(threads=threads)
        except EmbedderUnavailable as exc:
            return [{"embedder": "minilm", "skipped": str(exc)}]
        bank = MemoryBank(embedder)
        loop = asyncio.new_event_loop()
        loop.run_until_complete(bank.embed(queries[:3]))  # load weights
        samples = []
        for _round in range(2):
            for query in queries:
                start = time.perf_counter()
                loop.run_until_complete(bank.embed([query]))
                samples.append((time.perf_counter() - start) * 1e3)
        loop.close()
        rows.append(
            {
                "setting": label,
                "queries": len(samples),
                "p50_ms": statistics.median(samples),
                "p95_ms": _percentile(samples, 0.95),
                "max_ms": max(samples),
            }
        )
    return rows


async def _loop_gaps(concurrent: int) -> dict[str, Any]:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    plugin = MemoryPlugin()  # defaults: MiniLM when installed
    calls = [
        ScriptedTurn.call("remember", {"text": p["memory"]})
        .tool_calls[0]
        .model_copy(update={"id": f"c{i}"})
        for i, p in enumerate(pairs)
    ]
    rig = scripted_runtime(
        [ScriptedTurn(tool_calls=calls), "Stored.", *["ok"] * concurrent],
        plugins=[plugin],
        plugin_config={"memory": {"cache": False}},
    )
    await rig.runtime.run("agent", "Remember these.", profile_id="bench")
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        tick = 0.005
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(tick)
            now = time.perf_counter()
            gaps.append((now - last - tick) * 1e3)
            last = now

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    start = time.perf_counter()
    states = await asyncio.gather(
        *(
            rig.runtime.run("agent", pairs[i]["query"], thread_id=f"t{i}", profile_id="bench")
            for i in range(concurrent)
        )
    )
    wall = time.perf_counter() - start
    done.set()
    await ticking
    injected = sum(
        1 for r in rig.executor.requests[-concurrent:] if any("[mem_" in m.text for m in r.messages)
    )
    return {
        "embedder": plugin.embedder_for(MemoryConfig()).id,
        "concurrent_runs": concurrent,
        "ended_naturally": sum(
            s.end_cause is not None and s.end_cause.kind == "natural_end" for s in states
        ),
        "runs_with_memories_injected": injected,
        "wall_ms": wall * 1e3,
        "max_gap_ms": max(gaps),
        "p99_gap_ms": _percentile(gaps, 0.99),
        "ticks": len(gaps),
    }


def loop_responsiveness() -> dict[str, Any]:
    """The longest event-loop stall while 20 runs inject memories at once."""
    return asyncio.run(_loop_gaps(20))


SECTIONS = ("retrieval", "update", "embedders", "latency", "loop")


def _print_retrieval(search: list[dict[str, Any]], reps: int) -> None:
    print(f"\nTop-5 retrieval, dim {DIM} (median of {reps} queries)")
    print(
        f"{'memories':>10} | {'VectorIndex.search p50 (min)':>28} | "
        f"{'MemoryBank.search p50 (min)':>28}"
    )
    for row in search:
        print(
            f"{row['memories']:>10,} | {row['index_search_ms']:>11.3f} ms "
            f"({row['index_search_min_ms']:.3f} ms) | {row['bank_search_ms']:>11.3f} ms "
            f"({row['bank_search_min_ms']:.3f} ms)"
        )


def _print_update(update: dict[str, Any]) -> None:
    print("\nIndex update per new committed memory (median)")
    print(f"{'memories':>10} | {'in memory':>10} | {'+ disk cache':>12}")
    for row in update["per_memory_us"]:
        print(
            f"{row['memories']:>10,} | {row['no_cache_us']:>7.1f} us | "
            f"{row['disk_cache_us']:>9.1f} us"
        )
    print(
        f"Restart rebuild of {update['rebuild_from_cache_memories']:,} memories from the "
        f"disk cache: {update['rebuild_from_cache_ms']:.1f} ms, "
        f"{update['rebuild_embedded_texts']} texts embedded"
    )


def _print_embedders(embed: list[dict[str, Any]]) -> None:
    print(f"\nLocal embedders on {PAIRS.name}")
    print(
        f"{'embedder':>16} | {'sentences/s':>11} | {'recall@5':>8} | {'recall@1':>8} | "
        f"{'calibrated min_score':>20} | {'default':>7}"
    )
    for row in embed:
        if "skipped" in row:
            print(f"{row['embedder']:>16} | skipped: {row['skipped']}")
            continue
        print(
            f"{row['embedder']:>16} | {row['sentences_per_s']:>11,.0f} | "
            f"{row['recall_at_5']:>8.3f} | {row['recall_at_1']:>8.3f} | "
            f"{row['calibration']['calibrated']:>20.2f} | {row['default_min_score']:>7.2f}"
        )


def _print_latency(rows: list[dict[str, Any]]) -> None:
    print("\nOne query embedded through MemoryBank.embed (worker pool)")
    print(f"{'setting':>32} | {'p50':>8} | {'p95':>8} | {'max':>8} | queries")
    for row in rows:
        if "skipped" in row:
            print(f"{row['embedder']:>32} | skipped: {row['skipped']}")
            continue
        print(
            f"{row['setting']:>32} | {row['p50_ms']:>5.1f} ms | {row['p95_ms']:>5.1f} ms | "
            f"{row['max_ms']:>5.1f} ms | {row['queries']}"
        )


def _print_loop(row: dict[str, Any]) -> None:
    print(
        f"\nEvent loop while {row['concurrent_runs']} runs inject memories at once "
        f"({row['embedder']}): max gap {row['max_gap_ms']:.1f} ms, p99 gap "
        f"{row['p99_gap_ms']:.1f} ms over {row['ticks']} ticks of 5 ms; "
        f"{row['runs_with_memories_injected']}/{row['concurrent_runs']} runs got memories, "
        f"{row['ended_naturally']} ended naturally, {row['wall_ms']:.0f} ms in all"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run with few repetitions")
    ap.add_argument("--out", type=Path, help="JSON output path")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these sections")
    args = ap.parse_args()
    only = set(args.only or SECTIONS)
    reps = 30 if args.quick else 300
    sizes = [1_000, 10_000, 100_000]
    report_sections: dict[str, Any] = {}
    if "retrieval" in only:
        report_sections["retrieval"] = retrieval(sizes, reps)
        _print_retrieval(report_sections["retrieval"], reps)
    if "update" in only:
        report_sections["update"] = update_cost(sizes, 20 if args.quick else 200, 10_000)
        _print_update(report_sections["update"])
    if "embedders" in only:
        report_sections["embedders"] = embedders(args.quick)
        _print_embedders(report_sections["embedders"])
    if "latency" in only:
        report_sections["latency"] = latency(args.quick)
        _print_latency(report_sections["latency"])
    if "loop" in only:
        report_sections["loop"] = loop_responsiveness()
        _print_loop(report_sections["loop"])

    report = {
        "benchmark": "memory",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
            "load_average_1m": os.getloadavg()[0],
        },
        **report_sections,
    }
    name = "memory_quick" if args.quick else "memory"
    if args.only:
        name += "_" + "_".join(sorted(only))
    out = args.out or RESULTS / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
