"""Instructions per step of the agent loop, counted by callgrind (repeatable on a noisy machine).

Wall-clock timings on the shared 2-core machines move by 10-30% from run to
run; callgrind's instruction counts repeat to about 1%, so this is the number
to compare before and after a change to the per-step path.

What is counted: ``loop_overhead.awaken_prepare`` (the loop benchmark's own
agent: S calls of a no-op tool, then an answer, scripted model, in-memory
store) run K times, minus the same process doing only the K prepares. The
difference divided by K * (S + 1) model calls is the per-step figure.

Run: ``hatch run python benchmarks/step_instructions.py [--s 100] [--h 0] [--k 5]``.
``--src DIR`` puts another checkout's ``packages/awaken-runtime/src`` first on
``sys.path`` (to measure an older commit with the same harness); ``--otel`` runs
with ``awaken-otel`` tracing and metrics on (SDK providers, nothing exported). Writes
benchmarks/results/step_instructions.json. Needs valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _child(s: int, h: int, k: int, mode: str, otel: bool) -> None:
    """The measured process: K prepares, each followed by a run unless mode is 'prepare'."""
    sys.path.insert(0, str(HERE))
    import loop_overhead

    observer = loop_overhead.otel_observer() if otel else None

    async def main() -> None:
        run = await loop_overhead.awaken_prepare(s, h, observer)
        await run()  # warm-up: first-call costs (imports, caches) are not per step
        for _ in range(k):
            run = await loop_overhead.awaken_prepare(s, h, observer)
            if mode == "run":
                await run()

    asyncio.run(main())


def _count(args: argparse.Namespace, mode: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = dict(os.environ, PYTHONHASHSEED="0")
        if args.src:
            env["PYTHONPATH"] = os.pathsep.join([args.src, env.get("PYTHONPATH", "")])
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            mode,
            "--s",
            str(args.s),
            "--h",
            str(args.h),
            "--k",
            str(args.k),
            *(["--otel"] if args.otel else []),
        ]
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if match is None:
            raise SystemExit("callgrind wrote no totals line")
        return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--s", type=int, default=100, help="tool-calling steps per run")
    parser.add_argument("--h", type=int, default=0, help="history messages on the thread")
    parser.add_argument("--k", type=int, default=5, help="runs counted")
    parser.add_argument("--src", help="an awaken_runtime source dir to measure instead")
    parser.add_argument("--label", default="current", help="name of this measurement")
    parser.add_argument(
        "--otel", action="store_true", help="with awaken-otel tracing and metrics on (SDK)"
    )
    parser.add_argument("--child", choices=["run", "prepare"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.s, args.h, args.k, args.child, args.otel)
        return
    total_run = _count(args, "run")
    total_prepare = _count(args, "prepare")
    per_step = (total_run - total_prepare) / (args.k * (args.s + 1))
    row = {
        "label": args.label,
        "src": args.src or "installed",
        "s": args.s,
        "h": args.h,
        "k": args.k,
        "otel": args.otel,
        "instructions_per_step": round(per_step),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(f"{'label':<12} {'S':>5} {'H':>6} {'K':>3} {'instr/step':>12}")
    print(f"{args.label:<12} {args.s:>5} {args.h:>6} {args.k:>3} {per_step:>12,.0f}")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "step_instructions.json"
    rows = json.loads(path.read_text()) if path.exists() else []
    rows = [r for r in rows if r.get("label") != args.label] + [row]
    path.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
