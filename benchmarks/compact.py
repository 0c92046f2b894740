"""Compaction extension benchmark: per-step hook cost and counting throughput.

* step: the ``compact`` plugin's BEFORE_INFERENCE hook on threads of 100,
  1,000 and 10,000 messages (users, answers, tool exchanges) with a warm
  cache: the thread was indexed once, a summary covers all but the last
  ~20 messages (so the step plans summary + bridge + tail and does not
  compact), and every measured step appends one new message first, as a real
  step does. Target: the cost at 10,000 at most 1.3x the cost at 100.
* counting: tokens/s of the plugin's counter versus calling tiktoken directly
  (``len(encoding.encode(text, disallowed_special=()))``) on the same texts:
  ``TokenCounter.text`` and ``TokenCounter.count_message`` (uncached, the cost
  of a new message). Target: within 1.2x of tiktoken.

Run: ``hatch run python benchmarks/compact.py [--quick]``. Prints a table and
writes benchmarks/results/compact.json (compact_quick.json with --quick).
Encodings are loaded offline (litellm's bundled files); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, overload

from awaken_ext_compact import SUMMARY, CompactConfig, CompactPlugin, TokenCounter, load_encoding
from awaken_runtime import (
    InferenceRequest,
    Message,
    MessageView,
    ModelSpec,
    PhaseContext,
    PhaseHookPoint,
    RunInfo,
    Scope,
    Store,
    ToolCall,
)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SIZES = (100, 1_000, 10_000)
VOCAB = (
    "the a model tool call result user assistant thread window summary token count request "
    "compaction context boundary message agent runtime plugin state store step budget "
    "función naïve 数据 日本 données über 42 3.14 2025 x_y CamelCase snake_case {} [] () ;"
)
WORDS = VOCAB.split()


class _Chain(Sequence[Message]):
    """System prompt + a transcript view, as the loop's request carries them."""

    def __init__(self, head: Message, view: MessageView) -> None:
        self.head, self.view = head, view

    def __len__(self) -> int:
        return 1 + len(self.view)

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Message]: ...
    def __getitem__(self, i: int | slice) -> Message | Sequence[Message]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self.head if i == 0 else self.view[i - 1]

    def __iter__(self) -> Iterator[Message]:
        yield self.head
        yield from self.view


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _message(rng: random.Random, i: int) -> list[Message]:
    kind = i % 4
    if kind == 0:
        return [Message.user(_text(rng, 30))]
    if kind == 1:
        call = ToolCall(id=f"call_{i}", name="lookup", arguments={"q": _text(rng, 4)})
        return [Message.assistant(None, [call]), Message.tool(f"call_{i}", _text(rng, 60))]
    return [Message.assistant(_text(rng, 40))]


def _thread(n: int, rng: random.Random) -> list[Message]:
    out: list[Message] = []
    i = 0
    while len(out) < n:
        out.extend(_message(rng, i))
        i += 1
    return out[:n] if out[n - 1].role != "assistant" or not out[n - 1].tool_calls else out


def bench_step(n: int, steps: int) -> dict[str, Any]:
    """Median/mean microseconds of one hook call on a thread of ``n`` messages."""
    rng = random.Random(n)
    items = _thread(n, rng)
    plugin = CompactPlugin()
    config = CompactConfig(keep_recent_messages=10)
    (hook,) = plugin.resolve(config).hooks_at(PhaseHookPoint.BEFORE_INFERENCE)
    boundary = len(items) - 20
    while items[boundary].role == "tool":
        boundary -= 1
    summary = {
        "text": _text(rng, 300),
        "covered_through": items[boundary - 1].id,
        "covered_count": boundary,
        "compactions": 3,
        "tokens": 400,
    }
    data: dict[Any, Any] = {(Scope.THREAD, SUMMARY.key): summary}
    model = ModelSpec(
        id="m", provider="p", model="gpt-4o", context_window=128_000, max_output_tokens=4096
    )
    system = Message.system("You are a benchmark agent.")

    async def one() -> float:
        view = MessageView(items, 0, len(items))
        ctx = PhaseContext(
            point=PhaseHookPoint.BEFORE_INFERENCE,
            store=Store(data),
            run=RunInfo("run", "thread", "agent", "default", "default", 1),
            messages=view,
            plugin_id="compact",
            request=InferenceRequest(model=model, messages=_Chain(system, view), tools=[]),
        )
        start = time.perf_counter()
        reaction = await hook(ctx)
        elapsed = time.perf_counter() - start
        assert reaction is not None and reaction.commands
        return elapsed

    async def run() -> list[float]:
        await one()  # warm: index the thread once
        samples = []
        for i in range(steps):
            items.extend(_message(rng, i))  # a new step's messages (1 or 2)
            samples.append(await one())
        return samples

    gc.disable()
    try:
        samples = asyncio.run(run())
    finally:
        gc.enable()
    return {
        "messages": n,
        "median_us": statistics.median(samples) * 1e6,
        "mean_us": statistics.fmean(samples) * 1e6,
        "p90_us": sorted(samples)[int(0.9 * len(samples))] * 1e6,
        "steps": steps,
    }


def bench_counting(total_chars: int, reps: int) -> dict[str, Any]:
    """tokens/s of tiktoken directly vs the counter, on the same texts."""
    rng = random.Random(7)
    texts = [_text(rng, rng.randint(5, 400)) for _ in range(total_chars // 1200)]
    enc = load_encoding("o200k_base")
    counter = TokenCounter(enc)
    messages = [Message.user(t) for t in texts]

    def direct() -> int:
        return sum(len(enc.encode(t, disallowed_special=())) for t in texts)

    def ordinary() -> int:
        return sum(len(enc.encode_ordinary(t)) for t in texts)

    def ours_text() -> int:
        return sum(counter.text(t) for t in texts)

    def ours_message() -> int:
        return sum(counter.count_message(m) for m in messages)

    tokens = direct()
    assert ours_text() == tokens
    result: dict[str, Any] = {"texts": len(texts), "tokens": tokens, "encoding": enc.name}
    for name, fn in (
        ("tiktoken", direct),
        ("tiktoken.encode_ordinary", ordinary),
        ("counter.text", ours_text),
    ):
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        result[name] = tokens / min(times)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        ours_message()
        times.append(time.perf_counter() - start)
    result["counter.count_message"] = tokens / min(times)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    args = parser.parse_args()
    steps = 100 if args.quick else 1000
    rows = [bench_step(n, steps) for n in SIZES]
    counting = bench_counting(300_000 if args.quick else 3_000_000, 3 if args.quick else 7)
    base = rows[0]["median_us"]
    print(f"{'thread':>8} {'median us':>10} {'mean us':>9} {'p90 us':>8} {'vs 100':>7}")
    for row in rows:
        row["ratio_vs_100"] = row["median_us"] / base
        print(
            f"{row['messages']:>8} {row['median_us']:>10.1f} {row['mean_us']:>9.1f} "
            f"{row['p90_us']:>8.1f} {row['ratio_vs_100']:>6.2f}x"
        )
    direct = counting["tiktoken"]
    print(f"\ncounting ({counting['encoding']}, {counting['tokens']:,} tokens)")
    names = ("tiktoken", "tiktoken.encode_ordinary", "counter.text", "counter.count_message")
    for name in names:
        slower = direct / counting[name]
        counting[f"{name}_slowdown"] = slower
        print(f"{name:>24} {counting[name] / 1e6:>7.2f} Mtok/s  {slower:>5.2f}x tiktoken's time")
    out = {
        "step": rows,
        "counting": counting,
        "targets": {
            "step_10000_vs_100": rows[-1]["ratio_vs_100"],
            "step_target": 1.3,
            "counting_slowdown": counting["counter.count_message_slowdown"],
            "counting_target": 1.2,
        },
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        "quick": args.quick,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("compact_quick.json" if args.quick else "compact.json")
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
