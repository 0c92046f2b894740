"""litellm round-trip overhead: one streamed chat completion against a local server.

The local OpenAI-compatible test server (tests/runtime/models/litellm/openai_server.py) runs
in a subprocess on 127.0.0.1 and streams the same short answer (~10 SSE chunks
plus a usage chunk) to every request. In one run, interleaved round-robin, we
time a full streamed round trip (request sent -> ``[DONE]`` consumed) through:

* httpx:     a raw ``httpx.AsyncClient`` POST (keep-alive), reading the SSE
             lines and ``json.loads``-ing each chunk (the floor);
* litellm:   ``litellm.acompletion(stream=True)`` and iterating its chunks;
* executor:  awaken's ``LiteLLMExecutor.stream`` (litellm plus delta/tool-call
             assembly, usage, cost and retry bookkeeping). With no litellm
             callback configured it stops reading once the usage chunk has
             arrived (``success_logging="auto"``), so litellm never schedules
             its end-of-stream success handlers; the ``litellm`` row reads to
             the end and pays for them, which is why this row can be the cheaper.

Median (and p90) of N rounds each after a warm-up; overhead = median minus
the httpx median. Run: ``hatch run python benchmarks/litellm_roundtrip.py``
(``--rounds 50`` default; ``--quick`` for 10 rounds, writing
litellm_roundtrip_quick.json). Writes benchmarks/results/litellm_roundtrip.json.
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
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
SERVER = ROOT / "tests" / "runtime" / "models" / "litellm" / "openai_server.py"
MODEL = "openai/local-model"
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Say hello."},
]

Round = Callable[[], Awaitable[str]]


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    base = line.rsplit(" ", 1)[-1].strip()
    if not base.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"test server did not start: {line!r}")
    return proc, base


def make_httpx(base: str) -> tuple[Round, Callable[[], Awaitable[None]]]:
    import httpx

    client = httpx.AsyncClient(timeout=30)
    body = {
        "model": MODEL.split("/", 1)[1],
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    headers = {"Authorization": "Bearer sk-local"}

    async def one() -> str:
        parts: list[str] = []
        async with client.stream(
            "POST", f"{base}/chat/completions", json=body, headers=headers
        ) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                for choice in chunk["choices"]:
                    parts.append(choice["delta"].get("content") or "")
        return "".join(parts)

    return one, client.aclose


def make_litellm(base: str) -> Round:
    import litellm

    litellm.suppress_debug_info = True

    async def one() -> str:
        response = await litellm.acompletion(
            model=MODEL,
            messages=MESSAGES,
            api_base=base,
            api_key="sk-local",
            stream=True,
            stream_options={"include_usage": True},
            max_retries=0,
        )
        parts = []
        async for chunk in response:
            for choice in chunk.choices:
                parts.append(choice.delta.content or "")
        return "".join(parts)

    return one


def make_executor(base: str) -> Round:
    from awaken_runtime import InferenceRequest, LiteLLMExecutor, Message, ModelSpec
    from awaken_runtime import InferenceResponse as Final

    executor = LiteLLMExecutor()
    spec = ModelSpec(id="local", provider="litellm", model=MODEL, api_base=base)
    request = InferenceRequest(
        model=spec,
        messages=[Message.system(MESSAGES[0]["content"]), Message.user(MESSAGES[1]["content"])],
        tools=[],
    )

    async def one() -> str:
        text = ""
        async for item in executor.stream(request):
            if isinstance(item, Final):
                text = item.text
        return text

    return one


async def measure(base: str, rounds: int, warmup: int) -> dict[str, list[float]]:
    raw, close = make_httpx(base)
    impls: dict[str, Round] = {
        "httpx": raw,
        "litellm": make_litellm(base),
        "executor": make_executor(base),
    }
    expected = await raw()
    for name, one in impls.items():
        for _ in range(warmup):
            got = await one()
            if got != expected:
                raise SystemExit(f"{name} returned {got!r}, expected {expected!r}")
    samples: dict[str, list[float]] = {name: [] for name in impls}
    gc.collect()
    for _ in range(rounds):
        for name, one in impls.items():
            start = time.perf_counter()
            await one()
            samples[name].append(time.perf_counter() - start)
    await close()
    return samples


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="10 rounds, writes *_quick.json")
    args = parser.parse_args()
    rounds = 10 if args.quick else args.rounds
    proc, base = start_server()
    try:
        samples = asyncio.run(measure(base, rounds, args.warmup))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    floor = statistics.median(samples["httpx"])
    rows = []
    print(f"\nstreamed round trip against {base} (median of {rounds}, same run)\n")
    print(f"{'client':<10} {'median ms':>10} {'p90 ms':>9} {'overhead ms':>12} {'x httpx':>8}")
    for name, values in samples.items():
        med = statistics.median(values)
        row = {
            "client": name,
            "median_ms": round(med * 1e3, 3),
            "p90_ms": round(p90(values) * 1e3, 3),
            "overhead_ms": round((med - floor) * 1e3, 3),
            "ratio": round(med / floor, 2),
        }
        rows.append(row)
        print(
            f"{name:<10} {row['median_ms']:>10.2f} {row['p90_ms']:>9.2f} "
            f"{row['overhead_ms']:>12.2f} {row['ratio']:>8.2f}"
        )
    result: dict[str, Any] = {
        "benchmark": "litellm_roundtrip",
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "rounds": rounds,
        "warmup": args.warmup,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "versions": {name: version(name) for name in ("litellm", "httpx", "openai")},
        "results": rows,
        "samples_ms": {k: [round(v * 1e3, 4) for v in vs] for k, vs in samples.items()},
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("litellm_roundtrip_quick.json" if args.quick else "litellm_roundtrip.json")
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
