"""The official A2A TCK (1.0 branch, pinned, unpatched) against ``awaken a2a serve``.

Every mandatory test must pass except those ``tck_expected.toml`` lists with
their reason (see ``tck_harness``), against each of the two agents of
``agents_tck/``; what one cannot set up (a completed or a waiting task) must
pass against the other. The harness's own judgement is tested
too, on hand-made outcomes: an unexpected failure, a stale entry, a skip for
an unaccepted reason and a run where nothing passed each fail it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from a2a_rig import start, stop
from tck_harness import (
    Expected,
    Outcome,
    read_expected,
    run_tck,
    tck_python,
    uncovered,
    verdict,
)

AGENTS = ("tck", "tck-asks")
"""One agent whose tasks complete, one whose tasks wait for input (agents_tck/)."""


def test_the_tck_passes_every_mandatory_test_but_the_listed_ones(tmp_path: Path) -> None:
    python = tck_python()
    expected = read_expected()
    served = start(tmp_path, "agents_tck", "setup_tck:setup", keys="", extra=["--no-auth"])
    runs: dict[str, Outcome] = {}
    problems: list[str] = []
    try:
        # In parallel: the multi-stream tests wait 10 s on a waiting task whatever the server.
        with ThreadPoolExecutor(len(AGENTS)) as pool:
            futures = {
                agent: pool.submit(run_tck, python, f"{served.url}/a2a/{agent}", tmp_path / agent)
                for agent in AGENTS
            }
            done = {agent: future.result() for agent, future in futures.items()}
    finally:
        stop(served)
    for agent, (outcome, output) in done.items():
        runs[agent] = outcome
        summary = {s: len(outcome.ids(s)) for s in ("passed", "failed", "skipped")}
        found = verdict(outcome, expected)
        if found:
            problems += [f"against {agent}: {summary}", *found, output[-3000:]]
        # The run reached the server's real answers: most mandatory JSON-RPC tests pass.
        assert summary["passed"] >= 60, (agent, summary)
    problems += uncovered(runs, expected)
    assert not problems, "\n".join(problems)


def _outcome(**status: tuple[str, str]) -> Outcome:
    out = Outcome()
    for test, (state, message) in status.items():
        out.status[test], out.message[test] = state, message
    return out


EXPECTED = Expected(
    failures={"f": "fixture: needs the TCK server's message-id behaviour"},
    skips={"Transport 'grpc'": "transport: JSON-RPC only, no gRPC interface"},
)


def test_the_verdict_accepts_exactly_the_expected_run() -> None:
    run = _outcome(
        p=("passed", ""), f=("failed", "boom"), s=("skipped", "Transport 'grpc' not configured")
    )
    assert verdict(run, EXPECTED) == []


@pytest.mark.parametrize(
    ("run", "complaint"),
    [
        (
            _outcome(p=("passed", ""), f=("failed", ""), g=("failed", "boom")),
            "unexpected failure: g",
        ),
        (_outcome(p=("passed", ""), f=("passed", "")), "listed as failing but passed: f"),
        (_outcome(p=("passed", "")), "listed as failing but not run: f"),
        (
            _outcome(p=("passed", ""), f=("failed", ""), s=("skipped", "no server fixture")),
            "skipped for a reason not accepted",
        ),
        (_outcome(f=("failed", "")), "no test passed"),
    ],
)
def test_the_verdict_names_what_is_wrong(run: Outcome, complaint: str) -> None:
    problems = verdict(run, EXPECTED)
    assert any(complaint in p for p in problems), problems


def test_a_fixture_skip_must_pass_against_another_agent() -> None:
    expected = Expected(failures={}, skips={"needs x": "fixture: the TCK server's own behaviour"})
    skipped = ("skipped", "needs x, got y")
    assert uncovered({"a": _outcome(t=skipped), "b": _outcome(t=("passed", ""))}, expected) == []
    for other in (("skipped", "needs x"), ("failed", "boom")):
        problems = uncovered({"a": _outcome(t=skipped), "b": _outcome(t=other)}, expected)
        assert problems[0].startswith("t skipped against a") and "no other agent" in problems[0]
    # A skip of another kind (a transport) needs no other run.
    transport = Expected(failures={}, skips={"needs x": "transport: JSON-RPC only here"})
    assert uncovered({"a": _outcome(t=skipped), "b": _outcome()}, transport) == []


def test_the_expected_file_gives_a_kind_and_a_reason_for_every_entry(tmp_path: Path) -> None:
    read_expected()  # the committed file is well-formed
    bare = tmp_path / "bare.toml"
    bare.write_text('[failures]\n"t" = "it fails sometimes, we do not know why at all"\n')
    with pytest.raises(ValueError, match="needs a reason starting with one of"):
        read_expected(bare)
    short = tmp_path / "short.toml"
    short.write_text('[[skips]]\nreason = "x"\nwhy = "capability: no"\n')
    with pytest.raises(ValueError, match="needs a reason"):
        read_expected(short)
