"""Run the official A2A TCK (1.0) from pytest and judge its JUnit report.

The TCK is on no package registry: it is a read-only folder beside the
checkout (``../shared/conformance/a2a-tck``, or ``AWAKEN_A2A_TCK``), and
``python3 dev.py test`` installs its dependencies (pinned by the TCK's own
``uv.lock``, from PyPI) into ``build/a2a-tck/venv`` once, stamped with the
digest of its ``pyproject.toml`` and ``uv.lock``. Each run copies the suite
into a temporary folder (it writes ``reports/`` where it runs) and runs
``run_tck.py --level must`` there; nothing reaches the network.

The outcome is compared with ``tck_expected.toml``: every failing test must be
listed there with its reason, a listed test that no longer fails is an error
too (the file stays exact), and every skip must give one of the listed skip
reasons (a transport or capability awaken does not offer, or a fixture of the
TCK's own test server). The suite runs once per agent of ``agents_tck/``, and
a test skipped for a fixture against one agent must pass against another.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TCK = Path(os.environ.get("AWAKEN_A2A_TCK") or ROOT.parent / "shared/conformance/a2a-tck")
VENV = ROOT / "build" / "a2a-tck"
EXPECTED = HERE / "tck_expected.toml"
RUN_TIMEOUT = 600.0
"""Seconds a whole TCK run may take before the test fails (a hung request)."""


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{why}; .ci/run (python3 dev.py test) must provide it")
    pytest.skip(why)


def tck_python() -> Path:
    """The TCK venv's python; skips (fails under CI) when the suite or its venv is missing."""
    if not (TCK / "run_tck.py").is_file():
        _missing(f"the A2A TCK is not at {TCK} (set AWAKEN_A2A_TCK to its folder)")
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "uv.lock"):
        digest.update((TCK / name).read_bytes())
    stamp = VENV / ".stamp"
    python = VENV / "venv" / "bin" / "python"
    if not python.is_file() or not stamp.is_file() or stamp.read_text() != digest.hexdigest():
        _missing(f"the A2A TCK's venv {VENV} is missing or stale: run `python3 dev.py test`")
    return python


@dataclass
class Outcome:
    """What the TCK reported: test id -> ``passed`` / ``failed`` / ``skipped``, and why."""

    status: dict[str, str] = field(default_factory=dict)
    message: dict[str, str] = field(default_factory=dict)

    def ids(self, status: str) -> set[str]:
        """The tests with ``status``."""
        return {t for t, s in self.status.items() if s == status}


def read_junit(path: Path) -> Outcome:
    """The outcome of every test case of a JUnit report (an error counts as failed)."""
    outcome = Outcome()
    for case in ET.parse(path).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        status, message = "passed", ""
        for tag, meaning in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
            found = case.find(tag)
            if found is not None:
                status, message = meaning, found.get("message") or ""
                break
        outcome.status[test] = status
        outcome.message[test] = message
    return outcome


@dataclass(frozen=True)
class Expected:
    """``tck_expected.toml``: the failures (test -> reason) and the accepted skip reasons."""

    failures: dict[str, str]
    skips: dict[str, str]
    """Skip message prefix -> why that skip is acceptable."""


FAILURE_KINDS = ("transport:", "fixture:")
"""A test may fail only for a transport awaken does not offer, or because it needs a
behaviour of the TCK's own test server (picked by message id, which no model sees)."""
SKIP_KINDS = (*FAILURE_KINDS, "capability:", "not applicable:")


def read_expected(path: Path = EXPECTED) -> Expected:
    """The expected outcome; every entry must say which kind of reason it is, and why."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    failures = {str(k): str(v) for k, v in data.get("failures", {}).items()}
    skips = {str(s["reason"]): str(s["why"]) for s in data.get("skips", [])}
    for kinds, entries in ((FAILURE_KINDS, failures), (SKIP_KINDS, skips)):
        for name, why in entries.items():
            if not why.startswith(kinds) or len(why) < 30:
                raise ValueError(
                    f"{path.name}: {name!r} needs a reason starting with one of {kinds} and "
                    f"saying why, not {why!r}"
                )
    return Expected(failures, skips)


def verdict(outcome: Outcome, expected: Expected) -> list[str]:
    """Everything wrong with ``outcome`` against ``expected`` (empty: the run is as expected)."""
    problems = [
        f"unexpected failure: {t}: {outcome.message[t][:300]}"
        for t in sorted(outcome.ids("failed") - expected.failures.keys())
    ]
    problems += [
        f"listed as failing but {outcome.status.get(t, 'not run')}: {t} (remove it from "
        f"{EXPECTED.name})"
        for t in sorted(expected.failures.keys() - outcome.ids("failed"))
    ]
    problems += [
        f"skipped for a reason not accepted in {EXPECTED.name}: {t}: {outcome.message[t]!r}"
        for t in sorted(outcome.ids("skipped"))
        if not any(outcome.message[t].startswith(reason) for reason in expected.skips)
    ]
    if not outcome.ids("passed"):
        problems.append("no test passed: the TCK did not reach the server")
    return problems


def uncovered(runs: dict[str, Outcome], expected: Expected) -> list[str]:
    """Tests a run skipped for a ``fixture:`` reason that no other run passed.

    The TCK runs once per agent (one whose tasks complete, one whose tasks wait
    for input), so what one agent cannot set up, the other must have passed.
    """
    fixtures = [r for r, why in expected.skips.items() if why.startswith("fixture:")]
    problems = []
    for name, outcome in runs.items():
        for test in sorted(outcome.ids("skipped")):
            if not any(outcome.message[test].startswith(r) for r in fixtures):
                continue
            others = [o.status.get(test) for n, o in runs.items() if n != name]
            if "passed" not in others:
                problems.append(
                    f"{test} skipped against {name} ({outcome.message[test]!r}) "
                    f"and passed against no other agent"
                )
    return problems


def run_tck(python: Path, sut: str, workdir: Path) -> tuple[Outcome, str]:
    """Run ``run_tck.py --level must`` on a copy of the suite; its outcome and output."""
    copy = workdir / "a2a-tck"
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(TCK, copy, ignore=shutil.ignore_patterns(".venv", "reports", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(python), "run_tck.py", "--sut-host", sut, "--level", "must"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    output = done.stdout + done.stderr
    report = copy / "reports" / "junitreport.xml"
    if not report.is_file():
        pytest.fail(f"the TCK wrote no JUnit report (exit {done.returncode}):\n{output[-4000:]}")
    artifacts = os.environ.get("AWAKEN_TEST_ARTIFACTS")
    if artifacts:
        target = Path(artifacts) / "a2a-tck" / workdir.name
        shutil.copytree(copy / "reports", target, dirs_exist_ok=True)
    return read_junit(report), output
