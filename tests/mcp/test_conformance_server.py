"""The official MCP conformance suite, server mode, against ``awaken mcp serve --http``.

The served agent (``conformance/agents/everything.toml``) lists the tools the
scenarios call (``conformance/everything.py``) and enables the permissions
plugin, so every direct call goes through its gate. Every scenario of a
capability awaken claims must pass; the others are listed, each with the
capability and why, in ``conformance/expected-failures.yml``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance.harness import (
    HERE as SUITE_DIR,
)
from conformance.harness import (
    Process,
    awaken_command,
    expected_failures,
    free_port,
    require_suite,
    run_server_suite,
    start_listening,
)

EXPECTED = SUITE_DIR / "expected-failures.yml"


def _serve(tmp: Path, *extra: str) -> tuple[str, Process]:
    port = free_port()
    command = [
        awaken_command(), "mcp", "serve", "--http", "--no-auth", "--logging", "--port", str(port),
        "--agents", str(SUITE_DIR / "agents"), "--setup", "everything:setup",
        "--store", f"sqlite:///{tmp / 'awaken.db'}", *extra,
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SUITE_DIR), os.environ.get("PYTHONPATH", "")]),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    server = start_listening(command, port, tmp / "serve.log", env)
    return f"http://127.0.0.1:{port}/mcp", server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_suite()
    url, server = _serve(tmp_path_factory.mktemp("conformance-server"))
    yield url
    server.stop()


def test_every_expected_failure_names_an_unclaimed_capability() -> None:
    entries = expected_failures(EXPECTED, "server")
    assert entries, "the file lists the server scenarios awaken does not claim"
    claimed = {"tools", "ping", "initialize", "logging"}
    for entry in entries:
        assert entry.capability not in claimed, f"{entry.scenario}: {entry.capability} is claimed"


def test_expected_failures_file_refuses_an_entry_without_a_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("server:\n  - tools-call-audio\n")
    with pytest.raises(ValueError, match=r"tools-call-audio.*capability"):
        expected_failures(bad, "server")
    bad.write_text("server:\n  - tools-call-audio  # because\n")
    with pytest.raises(ValueError, match=r"bad\.yml:2"):
        expected_failures(bad, "server")


def test_server_scenarios_pass_but_the_listed_ones(served: str, tmp_path: Path) -> None:
    run = run_server_suite(served, EXPECTED, tmp_path / "results")
    expected = {e.scenario for e in expected_failures(EXPECTED, "server")}
    failed = run.failed()
    unexpected = {s: why for s, why in failed.items() if s not in expected}
    assert not unexpected, f"scenarios failing that awaken claims: {unexpected}\n{run.output}"
    stale = sorted(expected & set(run.passed()))
    assert not stale, f"listed as expected failures but passing now: {stale}"
    absent = sorted(expected - set(run.checks))
    assert not absent, f"listed as expected failures but not run by the suite: {absent}"
    assert run.returncode == 0, run.output
    # The run did exercise the content scenarios (not an empty or filtered suite).
    for scenario in (
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
    ):
        assert scenario in run.passed(), (scenario, run.checks.get(scenario))


ELICITATION = [
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
]


def test_with_sessions_the_elicitation_scenarios_pass(tmp_path: Path) -> None:
    # Stateless HTTP lists them (no back-channel); with --sessions the server asks the
    # suite's client through the awaken ticket of each tool (a USER_INPUT question).
    require_suite()
    stateless = {e.scenario for e in expected_failures(EXPECTED, "server")}
    assert set(ELICITATION) <= stateless
    none = tmp_path / "none.yml"
    none.write_text("server: []\n")
    url, server = _serve(tmp_path, "--sessions")
    try:
        for scenario in ELICITATION:
            run = run_server_suite(url, none, tmp_path / scenario, scenario=scenario)
            assert run.passed() == [scenario], (run.failed(), run.output)
            assert run.returncode == 0, run.output
    finally:
        server.stop()
