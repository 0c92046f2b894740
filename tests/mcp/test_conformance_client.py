"""The official MCP conformance suite, client mode, against awaken's MCP client plugin.

The suite starts its own test server per scenario and runs
``conformance/awaken_client.py <url>``: a runtime whose agent uses that server
through the ``mcp`` plugin, a scripted model calling each listed tool, and a
user who accepts every elicitation form as it comes (its defaults apply).
The core scenarios run one at a time (``sse-retry`` checks reconnection
timing); the auth scenarios run by suite (auth, backcompat, draft,
extensions). The scenarios awaken does not pass are listed in
``conformance/expected-failures.yml`` under ``client:``, each naming the
capability awaken does not claim and why.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conformance.harness import HERE as SUITE_DIR
from conformance.harness import expected_failures, require_suite, run_client_suite

EXPECTED = SUITE_DIR / "expected-failures.yml"
COMMAND = f"{sys.executable} {SUITE_DIR / 'awaken_client.py'}"
CORE = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]


def test_every_client_expected_failure_names_an_unclaimed_capability() -> None:
    entries = expected_failures(EXPECTED, "client")
    assert entries, "the file lists the client scenarios awaken does not claim"
    claimed = {"initialize", "tools", "elicitation", "sse", "streamable http"}
    for entry in entries:
        assert entry.capability not in claimed, f"{entry.scenario}: {entry.capability} is claimed"
        assert entry.scenario not in CORE


@pytest.mark.parametrize("scenario", CORE)
def test_core_client_scenarios_pass(scenario: str, tmp_path: Path) -> None:
    require_suite()
    run = run_client_suite(COMMAND, EXPECTED, tmp_path / "results", scenario=scenario)
    assert run.checks.get(scenario), f"{scenario} was not run:\n{run.output}"
    assert run.failed() == {}, run.output
    assert run.passed() == [scenario]
    assert run.returncode == 0, run.output


def test_auth_scenarios_fail_only_where_listed(tmp_path: Path) -> None:
    require_suite()
    run = run_client_suite(COMMAND, EXPECTED, tmp_path / "auth", suite="auth")
    for suite in ("backcompat", "draft", "extensions"):  # the auth scenarios of other suites
        more = run_client_suite(COMMAND, EXPECTED, tmp_path / suite, suite=suite)
        assert more.returncode == 0, more.output
        run.checks.update(more.checks)
    assert not set(run.checks) & set(CORE), "the core scenarios run one at a time"
    expected = {e.scenario for e in expected_failures(EXPECTED, "client")}
    assert run.mismatches(expected) == [], run.output
    assert run.returncode == 0, run.output
