"""Compact's first step in a new process on a 10,000-message thread.

An earlier process ran the ``compact`` plugin's BEFORE_INFERENCE hook on the
thread and committed the thread state it wrote; since then the thread grew
by a few messages. A fresh interpreter loads the thread and that state,
loads the token encoding (timed apart: once per process, whatever the
thread), and runs the hook once: the process's CPU time for it is the
figure (median of a few fresh interpreters). Threads of 10,000 messages (users, answers, tool
exchanges), three shapes:

* a summary covering all but the last ~20 messages (the usual shape);
* a summary covering the first 5,000 (a long raw tail under the trigger);
* no summary (a window large enough that nothing was compacted yet).

Target: at most 5 ms in every shape.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SIZE = 10_000
VOCAB = [
    "the",
    "a",
    "model",
    "tool",
    "call",
    "result",
    "user",
    "assistant",
    "thread",
    "window",
    "summary",
    "token",
    "count",
    "request",
    "compaction",
    "context",
    "boundary",
    "message",
    "agent",
    "runtime",
    "plugin",
    "state",
    "store",
    "step",
    "budget",
    "función",
    "naïve",
    "数据",
    "日本",
    "données",
    "über",
    "42",
    "3.14",
    "2025",
    "x_y",
    "CamelCase",
    "snake_case",
    "{}",
    "[]",
    "()",
    ";",
]
SHAPES = {
    # name: (messages the summary covers (None: no summary), context window)
    "summary, 20-message tail": (SIZE - 20, 128_000),
    "summary, 5,000-message tail": (5_000, 1_000_000),
    "no summary": (None, 2_000_000),
}


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(words))


def _thread(n: int, rng: random.Random) -> list[Any]:
    from awaken_runtime import Message, ToolCall

    out: list[Any] = []
    i = 0
    while len(out) < n:
        kind = i % 4
        if kind == 0:
            out.append(Message.user(_text(rng, 30)))
        elif kind == 1:
            call = ToolCall(id=f"call_{i}", name="lookup", arguments={"q": _text(rng, 4)})
            out += [Message.assistant(None, [call]), Message.tool(call.id, _text(rng, 60))]
        else:
            out.append(Message.assistant(_text(rng, 40)))
        i += 1
    return out[:n] if not out[n - 1].tool_calls else out[: n + 1]


def _context(items: list[Any], data: dict[Any, Any], window: int) -> tuple[Any, Any]:
    from awaken_ext_compact import CompactConfig, CompactPlugin
    from awaken_runtime import (
        InferenceRequest,
        Message,
        MessageView,
        ModelSpec,
        PhaseContext,
        PhaseHookPoint,
        RunInfo,
        Store,
    )

    plugin = CompactPlugin()
    config = CompactConfig(context_window=window)
    (hook,) = plugin.resolve(config).hooks_at(PhaseHookPoint.BEFORE_INFERENCE)
    model = ModelSpec(id="m", provider="p", model="gpt-4o", max_output_tokens=4096)
    view = MessageView(items, 0, len(items))
    system = Message.system("You are a benchmark agent.")
    ctx = PhaseContext(
        point=PhaseHookPoint.BEFORE_INFERENCE,
        store=Store(data),
        run=RunInfo("run", "thread", "agent", "default", "default", 1),
        messages=view,
        plugin_id="compact",
        request=InferenceRequest(model=model, messages=[system, *items], tools=[]),
    )
    return (plugin, config, model, hook), ctx


def _prepare(path: Path, covered: int | None, window: int) -> None:
    """The earlier process: run the hook once, keep the thread state it wrote."""
    from awaken_ext_compact import SUMMARY
    from awaken_runtime import Scope, Set

    rng = random.Random(7)
    items = _thread(SIZE, rng)
    earlier = items[:-4]  # the thread grew by a step since
    data: dict[Any, Any] = {}
    if covered is not None:
        data[(Scope.THREAD, SUMMARY.key)] = {
            "text": _text(rng, 300),
            "covered_through": items[covered - 1].id,
            "covered_count": covered,
            "compactions": 3,
            "tokens": 400,
        }
    (_, _, _, hook), ctx = _context(earlier, data, window)
    reaction = asyncio.run(hook(ctx))
    for command in reaction.commands if reaction is not None else ():
        if command.scope is Scope.THREAD and isinstance(command.action, Set):
            data[(Scope.THREAD, command.key)] = command.action.value
    thread_state = [[key, value] for (scope, key), value in data.items() if scope is Scope.THREAD]
    path.write_text(
        json.dumps(
            {
                "messages": [m.model_dump(mode="json") for m in items],
                "state": thread_state,
                "window": window,
            }
        )
    )


def _child(path: Path) -> None:
    """The new process: load the thread, the encoding, then time the first step."""
    from _section import cpu_seconds

    from awaken_runtime import Message, Scope

    raw = json.loads(path.read_text())
    items = [Message.model_validate(m) for m in raw["messages"]]
    data = {(Scope.THREAD, key): value for key, value in raw["state"]}
    (plugin, config, model, hook), ctx = _context(items, data, raw["window"])

    async def run() -> dict[str, float]:
        start = cpu_seconds()
        await plugin.caches.counter(config, model.model)  # the encoding: once per process
        encoding = cpu_seconds() - start
        start = cpu_seconds()
        await hook(ctx)
        first = cpu_seconds() - start
        start = cpu_seconds()
        await hook(ctx)
        second = cpu_seconds() - start
        return {"encoding": encoding, "first": first, "second": second}

    print(json.dumps(asyncio.run(run())))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(Path(sys.argv[2]))
        return
    from _section import emit, parse

    args = parse(__doc__)
    runs = 3 if args.quick else 7
    rows, checks = [], []
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, (covered, window) in SHAPES.items():
            files[name] = Path(tmp) / f"{len(files)}.json"
            _prepare(files[name], covered, window)
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in SHAPES}
        for _ in range(runs):  # interleaved: one fresh interpreter per shape per round
            for name, path in files.items():
                out = subprocess.run(
                    [sys.executable, str(HERE), "--child", str(path)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                samples[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for name, got in samples.items():
        first = statistics.median(s["first"] for s in got) * 1e3
        second = statistics.median(s["second"] for s in got) * 1e3
        encoding = statistics.median(s["encoding"] for s in got) * 1e3
        rows.append([name, SIZE, first, second, encoding, runs])
        checks.append((f"{name}: first step in a new process <= 5 ms ({first:.2f} ms)", first <= 5))
    emit(
        args,
        title="compact: first step in a new process on a 10,000-message thread (CPU ms)",
        columns=["thread", "messages", "first step ms", "second step ms", "encoding ms", "runs"],
        rows=rows,
        checks=checks,
        notes=["median of fresh interpreters; the encoding load is once per process"],
    )


if __name__ == "__main__":
    main()
