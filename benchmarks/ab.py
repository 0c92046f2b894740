"""Before and after in one run: a benchmark script against two checkouts, in interleaved rounds.

A shared machine drifts between two runs made minutes apart, so "before" and
"after" figures from separate commands do not compare. This runs the same
benchmark command alternately against another checkout (``--before``, its
``packages/*/src`` first on ``PYTHONPATH``) and this one, ``--rounds`` times,
and prints for every numeric cell the median over rounds of each side, the
ratio of those medians, and the median of the per-round ratios (each round's
pair ran back to back, so its ratio sees the same load). Cells are read from
the benchmark's JSON: ``loop_overhead.py`` (``cells``) and ``real_path``
(each section's ``rows``).

Run (from the checkout under test, in the bench env for LangGraph)::

    hatch run python benchmarks/ab.py --before /tmp/old --rounds 5 -- \\
        benchmarks/loop_overhead.py --no-langgraph --budget 1
    hatch run bench:python benchmarks/ab.py --before /tmp/old --rounds 3 -- \\
        benchmarks/real_path --only plugins compact

Nothing is written to ``benchmarks/results/`` (each run's JSON goes to a
temporary folder, the real_path driver's own file is removed again).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _sources(root: str) -> list[str]:
    return [str(p) for p in sorted(Path(root, "packages").glob("*/src"))]


def _cells(report: dict[str, Any]) -> dict[str, float]:
    """Every numeric cell of a benchmark's JSON, by a readable name."""
    found: dict[str, float] = {}
    for cell in report.get("cells", []):  # loop_overhead.py
        where = f"S={cell['steps']} H={cell['history']}"
        for impl, value in cell["us_per_step"].items():
            found[f"loop | {where} | {impl} us/step"] = value
    for name, section in report.get("sections", {}).items():  # real_path
        columns = section.get("columns", [])
        for row in section.get("rows", []):
            # A row is named by its leading cells up to the first measured (float) one.
            first = next((i for i, c in enumerate(row) if isinstance(c, float)), len(row))
            label = " ".join(str(c) for c in row[:first])
            for column, value in zip(columns[first:], row[first:], strict=False):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    found[f"{name} | {label} | {column}"] = float(value)
    return found


def _run(command: list[str], before: str | None, out: Path, label: str) -> dict[str, float]:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    if before:
        env["PYTHONPATH"] = os.pathsep.join([*_sources(before), env.get("PYTHONPATH", "")])
    args = [sys.executable, *command]
    is_real_path = Path(command[0]).name == "real_path"
    args += ["--label", label] if is_real_path else ["--out", str(out)]
    proc = subprocess.run(args, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:] or proc.stdout[-3000:]}")
    if is_real_path:
        written = HERE / "results" / f"real_path_{label}.json"
        out.write_text(written.read_text())
        written.unlink()
    return _cells(json.loads(out.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the other checkout's root")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...]")
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"]
    sides: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            # Alternate which side goes first, so neither always runs on a warmer machine.
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for side in order:
                out = Path(tmp, f"{side}_{r}.json")
                src = args.before if side == "before" else None
                sides[side].append(_run(command, src, out, f"ab_{side}_{r}"))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    names = [n for n in sides["after"][0] if all(n in run for run in sides["before"])]
    print(f"command: {' '.join(command)}; rounds: {args.rounds}; before: {args.before}")
    print(f"{'cell':<64} {'before':>10} {'after':>10} {'ratio':>7} {'paired':>7}")
    for name in names:
        b = statistics.median(run[name] for run in sides["before"])
        a = statistics.median(run[name] for run in sides["after"])
        paired = statistics.median(
            x[name] / y[name] if y[name] else float("nan")
            for x, y in zip(sides["after"], sides["before"], strict=True)
        )
        ratio = a / b if b else float("nan")
        print(f"{name[:64]:<64} {b:>10.2f} {a:>10.2f} {ratio:>6.3f}x {paired:>6.3f}x")


if __name__ == "__main__":
    main()
