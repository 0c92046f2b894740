"""Fast on the real path: one command for every section of issue #19's measurements.

Each section is its own script in this folder (``provider.py``, ``plugins.py``,
``concurrency.py``, ``load.py``, ``compact.py``, ``imports.py``), run here in a
fresh interpreter so that sections do not share import state or caches. A
section prints nothing itself; it writes one JSON object (``title``,
``columns``, ``rows``, ``checks``, ``notes``) that this driver prints as a
table and stores in ``benchmarks/results/real_path[_LABEL].json``.

Run::

    hatch run bench:python benchmarks/real_path                # every section
    hatch run bench:python benchmarks/real_path --only plugins load
    hatch run bench:python benchmarks/real_path --quick        # smoke run
    hatch run bench:python benchmarks/real_path --src /work/old --label before
    hatch run bench:python benchmarks/real_path --only imports --beside /work/old

``--src ROOT`` measures another checkout (its ``packages/*/src`` go first on
``PYTHONPATH``) with this checkout's harness, so "before" and "after" come
from the same command. ``--compare FILE`` prints a stored result's rows next
to this run's. ``--beside ROOT`` hands another checkout to the sections
that can measure it in the same run, interleaved with this one (``imports``:
a fresh interpreter's figures drift too much between runs on a shared machine
for two runs' ratios to compare). The bench env is the one with LangGraph (the concurrency
section's reference).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"
SECTIONS = ["provider", "plugins", "concurrency", "load", "compact", "imports"]


def _sources(root: str) -> list[str]:
    """A checkout's package source folders, as ``PYTHONPATH`` entries."""
    return [str(p) for p in sorted(Path(root, "packages").glob("*/src"))]


def _env(src: str | None, beside: str | None = None) -> dict[str, str]:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    paths = [str(HERE), *(_sources(src) if src else [])]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    if beside:
        env["REAL_PATH_BESIDE"] = os.pathsep.join(_sources(beside))
        env["REAL_PATH_BESIDE_LABEL"] = beside
    return env


def _run_section(name: str, args: argparse.Namespace) -> dict[str, Any]:
    script = HERE / f"{name}.py"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "section.json"
        cmd = [sys.executable, str(script), "--json-out", str(out)]
        if args.quick:
            cmd.append("--quick")
        proc = subprocess.run(cmd, env=_env(args.src, args.beside), capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            return {
                "title": name,
                "error": (proc.stderr or proc.stdout)[-2000:],
                "columns": [],
                "rows": [],
                "checks": [],
            }
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _print(name: str, section: dict[str, Any], before: dict[str, Any] | None) -> None:
    print(f"\n## {name}: {section.get('title', name)}")
    if "error" in section:
        print("FAILED:\n" + section["error"])
        return
    tables = [("this run", section)]
    if before is not None:
        tables.insert(0, ("before", before))
    for label, table in tables:
        columns = table["columns"]
        cells = [[_fmt(c) for c in row] for row in table["rows"]]
        widths = [max([len(str(h)), *(len(r[i]) for r in cells)]) for i, h in enumerate(columns)]
        if before is not None:
            print(f"[{label}]")
        print(" | ".join(str(h).rjust(w) for h, w in zip(columns, widths, strict=True)))
        print("-+-".join("-" * w for w in widths))
        for row in cells:
            print(" | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    for note in section.get("notes", []):
        print(f"  note: {note}")
    for text, passed in section.get("checks", []):
        print(f"  [{'PASS' if passed else 'FAIL'}] {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run these sections")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument("--src", help="a checkout root to measure instead of this one")
    parser.add_argument("--label", default="", help="name of this measurement (file suffix)")
    parser.add_argument("--compare", help="a stored real_path JSON to print beside this run")
    parser.add_argument(
        "--beside", help="a checkout root the imports section measures in the same run"
    )
    args = parser.parse_args()
    before = json.loads(Path(args.compare).read_text()) if args.compare else {}
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "src": args.src or "this checkout",
        "quick": args.quick,
        "sections": {},
    }
    for name in args.only or SECTIONS:
        section = _run_section(name, args)
        results["sections"][name] = section
        _print(name, section, before.get("sections", {}).get(name) if before else None)
    RESULTS.mkdir(exist_ok=True)
    suffix = ("_" + args.label if args.label else "") + ("_quick" if args.quick else "")
    path = RESULTS / f"real_path{suffix}.json"
    if args.only and path.exists():
        stored = json.loads(path.read_text())
        stored["sections"].update(results["sections"])
        stored["date"] = results["date"]
        results = stored
    path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {path.relative_to(HERE.parent.parent)}")
    failed = [n for n, s in results["sections"].items() if "error" in s]
    if failed:
        raise SystemExit(f"sections that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
