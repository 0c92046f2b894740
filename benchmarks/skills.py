"""Skills benchmark: discovery time and per-step hook cost for 10 / 100 / 1,000 skills.

For each size N, N skill folders (SKILL.md with a description, a when-to-use
line, two declared arguments and a ~1 KB body) are generated in a temp dir.

* ``discovery``: wall time of one full read of the folder (``SkillRegistry.refresh``),
  the median of ``--reps`` fresh registries (files are in the page cache after
  the first).
* ``first step``: the first BEFORE_INFERENCE hook call, which renders the catalog.
* ``step (idle)``: median cost of a later hook call with no active skill.
* ``step (1 active)``: the same with one active skill (one ``stat`` of its
  SKILL.md, cached instructions, a tool filter).

The per-step numbers must not grow with N: the catalog is rendered once per
registry generation and reused. Usage: ``hatch run python benchmarks/skills.py
[--quick]``. Writes ``benchmarks/results/skills.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awaken_ext_skills import ACTIVE_SKILLS, SkillRegistry, SkillsConfig, SkillsPlugin
from awaken_runtime import PhaseContext, PhaseHookPoint, RunInfo, Scope, Store, Transcript

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = (10, 100, 1000)
BODY = "## Steps\n\n" + "\n".join(f"{i}. Do step {i} for ${{target}} carefully." for i in range(30))


def generate(base: Path, count: int) -> None:
    """Write ``count`` valid skills under ``base``."""
    for i in range(count):
        name = f"skill-{i:04d}"
        folder = base / name
        (folder / "references").mkdir(parents=True)
        (folder / "references" / "guide.md").write_text("A guide.\n")
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\n"
            f"description: 'Handles task family {i}: parsing, checking and summarising inputs.'\n"
            f"when-to-use: The user asks about family {i}.\n"
            "allowed-tools: read_file search\n"
            "arguments:\n  - name: target\n    description: What to work on.\n"
            "    required: true\n  - name: mode\n    description: How.\n"
            "metadata:\n  owner: bench\n"
            f"---\n{BODY}\n"
        )


def time_discovery(base: Path, reps: int) -> float:
    samples = []
    for _ in range(reps):
        registry = SkillRegistry([base], packs=False)
        start = time.perf_counter()
        registry.refresh()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def context(store: Store) -> PhaseContext:
    info = RunInfo("run", "thread", "agent", "default", "default", 1)
    return PhaseContext(PhaseHookPoint.BEFORE_INFERENCE, store, info, Transcript().view())


async def time_hook(hook: Any, store: Store, iterations: int) -> float:
    ctx = context(store)
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(iterations):
            await hook(ctx)
        rounds.append((time.perf_counter() - start) / iterations)
    return statistics.median(rounds)


async def measure(count: int, reps: int, iterations: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        generate(base, count)
        discovery = time_discovery(base, reps)
        plugin = SkillsPlugin()
        config = SkillsConfig(paths=[str(base)], packs=False)
        contributions = plugin.resolve(config)  # reads the skills once
        hook = contributions.hooks_at(PhaseHookPoint.BEFORE_INFERENCE)[0]
        idle = Store({})
        start = time.perf_counter()
        reaction = await hook(context(idle))
        first = time.perf_counter() - start
        catalog = reaction.commands[0].action.value["skills.catalog"]["content"]
        skill = plugin.registry(config).get("skill-0000")
        assert skill is not None
        active_cmd = ACTIVE_SKILLS.set(
            {"skill-0000": {"fingerprint": skill.fingerprint, "arguments": {"target": "x"}}}
        )
        active = Store({(Scope.THREAD, ACTIVE_SKILLS.key): active_cmd.action.value})
        step_idle = await time_hook(hook, idle, iterations)
        step_active = await time_hook(hook, active, iterations)
    return {
        "skills": count,
        "discovery_ms": discovery * 1e3,
        "first_step_us": first * 1e6,
        "step_idle_us": step_idle * 1e6,
        "step_active_us": step_active * 1e6,
        "catalog_bytes": len(catalog.encode()),
        "catalog_entries": catalog.count("<skill "),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    reps, iterations = (2, 500) if args.quick else (5, 5000)
    rows = [asyncio.run(measure(n, reps, iterations)) for n in SIZES]
    header = (
        f"{'skills':>7} {'discovery':>12} {'first step':>12} {'step idle':>11} "
        f"{'step 1 active':>14} {'catalog':>16}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['skills']:>7} {r['discovery_ms']:>9.1f} ms {r['first_step_us']:>9.0f} us "
            f"{r['step_idle_us']:>8.2f} us {r['step_active_us']:>11.2f} us "
            f"{r['catalog_entries']:>4} / {r['catalog_bytes']:>5} B"
        )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "skills.json"
    out.write_text(
        json.dumps(
            {
                "benchmark": "skills",
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "quick": args.quick,
                "config": {"catalog_max_entries": 100, "catalog_max_bytes": 8192},
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")


if __name__ == "__main__":
    main()
