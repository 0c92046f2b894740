"""The official A2A TCK (1.0 branch, pinned, unpatched) against ``awaken a2a serve``.

Every mandatory test must pass except those ``tck_expected.toml`` lists with
their reason (see ``tck_harness``). The harness's own judgement is tested
too, on hand-made outcomes: an unexpected failure, a stale entry, a skip for
an unaccepted reason and a run where nothing passed each fail it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from a2a_rig import start, stop
from tck_harness import Expected, Outcome, read_expected, run_tck, tck_python, verdict


def test_the_tck_passes_every_mandatory_test_but_the_listed_ones(tmp_path: Path) -> None:
    python = tck_python()
    expected = read_expected()
    served = start(tmp_path, "agents_tck/tck.toml", "setup_tck:setup", keys="", extra=["--no-auth"])
    try:
        outcome, output = run_tck(python, f"{served.url}/a2a/tck", tmp_path)
    finally:
        stop(served)
    problems = verdict(outcome, expected)
    summary = {s: len(outcome.ids(s)) for s in ("passed", "failed", "skipped")}
    assert not problems, "\n".join([f"TCK --level must: {summary}", *problems, output[-3000:]])
    # The run reached the server's real answers: most mandatory JSON-RPC tests pass.
    assert summary["passed"] >= 60, summary


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
