"""Does the first LiteLLM inference stall the event loop? A heartbeat task says.

A fresh interpreter (litellm not yet imported) starts a heartbeat coroutine
that wakes every 5 ms and records how late each wake-up was, then runs one
agent turn against the local OpenAI-compatible test server. The largest gap
between beats is how long the loop was blocked; a server's other requests
would have waited that long. Two variants: ``cold`` (no warm-up: the first
``stream`` imports litellm in a worker thread) and ``warm_up`` (the process
calls ``Runtime.warm_up()`` first, as ``awaken run`` and a server do; the
gaps during the warm-up are reported apart: a worker thread still shares the
GIL, and C code in litellm's import, such as pydantic building its schemas,
holds it for a while).

Run: ``hatch run python benchmarks/first_inference_heartbeat.py [--src DIR --label NAME
--variants cold,warm_up]``.
Prints a table and writes benchmarks/results/first_inference_heartbeat.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
SERVER_DIR = ROOT / "tests" / "runtime" / "models" / "litellm"
BEAT_S = 0.005


def _child(variant: str, base_url: str) -> None:
    from awaken_runtime import AgentConfig, AgentRuntimeBuilder, LiteLLMExecutor, ModelSpec

    spec = ModelSpec(id="m", provider="litellm", model="openai/local-model", api_base=base_url)
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_model(spec)
        .with_provider("litellm", LiteLLMExecutor())
        .with_agent_spec(AgentConfig(id="agent", model_binding="m"))
        .build()
    )

    async def main() -> dict[str, float]:
        gaps: list[tuple[float, float]] = []  # (when the gap ended, its length)
        stop = asyncio.Event()

        async def heartbeat() -> None:
            last = time.perf_counter()
            while not stop.is_set():
                await asyncio.sleep(BEAT_S)
                now = time.perf_counter()
                gaps.append((now, now - last - BEAT_S))
                last = now

        beat = asyncio.create_task(heartbeat())
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        if variant == "warm_up":
            await runtime.warm_up()
        warmed = time.perf_counter()
        state = await runtime.run("agent", "hi")
        done = time.perf_counter()
        stop.set()
        await beat
        assert state.final_text == "warm", state.end_cause

        def worst(start: float, end: float) -> float:
            return max((g for t, g in gaps if start < t <= end), default=0.0) * 1000

        return {
            "max_gap_ms": worst(warmed, done),
            "warm_up_max_gap_ms": worst(started, warmed),
            "beats": len(gaps),
            "warm_up_s": warmed - started,
            "first_run_s": done - warmed,
        }

    print(json.dumps(asyncio.run(main())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", help="an awaken_runtime source dir to measure instead")
    parser.add_argument("--label", default="current")
    parser.add_argument(
        "--variants", default="cold,warm_up", help="comma-separated (main before issue 18: cold)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.base_url)
        return
    sys.path.insert(0, str(SERVER_DIR))
    from openai_server import OpenAIServer, Reply

    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    if args.src:
        env["PYTHONPATH"] = os.pathsep.join([args.src, env.get("PYTHONPATH", "")])
    rows = []
    with OpenAIServer(default=Reply(text="warm")) as server:
        for variant in args.variants.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--child", variant, "--base-url", server.base_url],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append({"variant": variant, **json.loads(out.stdout.strip().splitlines()[-1])})
    print(
        f"{'label':<10} {'variant':<8} {'first run s':>12} {'its max gap ms':>15} "
        f"{'warm-up s':>10} {'its max gap ms':>15}"
    )
    for row in rows:
        print(
            f"{args.label:<10} {row['variant']:<8} {row['first_run_s']:>12.2f} "
            f"{row['max_gap_ms']:>15.1f} {row['warm_up_s']:>10.2f} "
            f"{row['warm_up_max_gap_ms']:>15.1f}"
        )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "first_inference_heartbeat.json"
    history = json.loads(path.read_text()) if path.exists() else []
    history.append(
        {"when": datetime.now(UTC).isoformat(), "label": args.label, "src": args.src, "rows": rows}
    )
    path.write_text(json.dumps(history, indent=2) + "\n")


if __name__ == "__main__":
    main()
