"""Mutation run over the permission gate and the server's keys code (mutmut).

    hatch run mutate-gate                  # stage, run mutmut, print the results
    hatch run mutate-gate --max-children 1 # fewer workers on a busy machine
    hatch run mutate-gate --results        # the last run's counts again

The counts, the score and the surviving mutants go to
``benchmarks/results/mutate_gate.json``; ``mutmut show NAME`` in
``build/mutate-gate`` shows one mutant.

mutmut derives a module's name from its path (``src/pkg/mod.py`` is
``pkg.mod``), so the workspace's ``packages/<dist>/src`` layout is staged into
``build/mutate-gate/``: the two packages under ``src/`` (whole, so they
import; only the modules below are mutated) and the tests that exercise them.
mutmut copies ``src/`` to ``mutants/src`` and puts that first on ``sys.path``,
ahead of the editable installs, so the tests import the mutants.

Mutated: ``awaken_ext_permissions`` ``_vouch``, ``_numbers`` and
``_matchers`` (what an allow vouches for, numeric caps, how a condition
matches an argument) and ``awaken_server._keys`` (the keys file, the bearer
header). ``_policy`` and ``_arguments`` (precedence, declared views) are not
in this run yet: about 1,300 mutants with them take an hour on two cores.
Tests: ``tests/ext_permissions`` without the subprocess and bashlex-agreement
modules (``test_cli``, ``test_sqlite``, ``test_shell``, ``test_readme``: they
test code not mutated here, slowly) and ``tests/server/test_keys.py`` without
its real-server test (the in-process middleware test covers the same code).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / "build" / "mutate-gate"

PACKAGES = {
    "awaken_ext_permissions": ROOT / "packages/awaken-ext-permissions/src/awaken_ext_permissions",
    "awaken_server": ROOT / "packages/awaken-server/src/awaken_server",
}
MUTATED = [
    "src/awaken_ext_permissions/_vouch.py",
    "src/awaken_ext_permissions/_numbers.py",
    "src/awaken_ext_permissions/_matchers.py",
    "src/awaken_server/_keys.py",
]
SKIPPED_TESTS = {"test_cli.py", "test_sqlite.py", "test_shell.py", "test_readme.py"}
SERVER_TESTS = ["test_keys.py", "conftest.py", "srv_util.py", "sse_util.py"]

CONFIG = """\
[tool.mutmut]
source_paths = ["src"]
only_mutate = {only}
tests_dir = ["tests/ext_permissions", "tests/server/test_keys.py"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-k", "not real_server"]

[tool.pytest.ini_options]
addopts = "--import-mode=importlib"
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""


def stage() -> None:
    """A fresh ``build/mutate-gate`` holding the sources, the tests and the config."""
    if STAGE.exists():
        shutil.rmtree(STAGE)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name, source in PACKAGES.items():
        shutil.copytree(source, STAGE / "src" / name, ignore=ignore)
    shutil.copytree(
        ROOT / "tests/ext_permissions",
        STAGE / "tests/ext_permissions",
        ignore=shutil.ignore_patterns("__pycache__", *SKIPPED_TESTS),
    )
    (STAGE / "tests/server").mkdir(parents=True)
    for name in SERVER_TESTS:
        shutil.copy2(ROOT / "tests/server" / name, STAGE / "tests/server" / name)
    only = "[" + ", ".join(f'"{path}"' for path in MUTATED) + "]"
    (STAGE / "pyproject.toml").write_text(CONFIG.format(only=only), encoding="utf-8")


def mutmut(*args: str) -> int:
    """Run ``mutmut ARGS`` in the stage (the env's mutmut, this interpreter)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.call([sys.executable, "-m", "mutmut", *args], cwd=STAGE, env=env)


def record() -> dict[str, object]:
    """Count the run's mutants by status and write ``results/mutate_gate.json``."""
    done = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=STAGE,
        capture_output=True,
        text=True,
        check=True,
    )
    status: dict[str, str] = {}
    for line in done.stdout.splitlines():
        name, sep, state = line.strip().rpartition(": ")
        if sep:
            status[name] = state
    counts = {
        state: sum(1 for s in status.values() if s == state) for state in set(status.values())
    }
    tested = len(status) - counts.get("skipped", 0) - counts.get("not checked", 0)
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    summary: dict[str, object] = {
        "mutated": MUTATED,
        "counts": dict(sorted(counts.items())),
        "score": round(100 * killed / tested, 2) if tested else None,
        "survived": sorted(n for n, s in status.items() if s == "survived"),
    }
    out = ROOT / "benchmarks" / "results" / "mutate_gate.json"
    out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: summary[k] for k in ("counts", "score")}))
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--results", action="store_true", help="show the last run's results")
    args = parser.parse_args()
    if not args.results:
        stage()
        status = mutmut("run", "--max-children", str(args.max_children))
        if status:
            return status
    record()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
