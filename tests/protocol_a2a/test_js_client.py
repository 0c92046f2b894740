"""The official ``@a2a-js/sdk`` client (pinned by js/package-lock.json) driving an awaken agent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest
from a2a_rig import CHILD_KEY, HERE, Served

JS = HERE / "js"


def _node(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` (in js/) and read the JSON report it prints last."""
    if not (JS / "node_modules").is_dir() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node or tests/protocol_a2a/js/node_modules missing: `npm ci` them")
        pytest.skip("run `npm ci --prefix tests/protocol_a2a/js` (needs Node 20)")
    done = subprocess.run(
        ["node", script, *args], cwd=JS, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stderr}\n{done.stdout}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_the_js_sdk_streams_answers_and_cancels_through_input_required(child: Served) -> None:
    out = _node("a2a_client.mjs", child.card_url("child"), CHILD_KEY)
    assert out["card"]["name"] == "child"
    weather = out["weather"]
    assert (
        weather["states"][0] == "TASK_STATE_SUBMITTED" and weather["last"] == "TASK_STATE_COMPLETED"
    )
    assert weather["text"] == "Let me check.Result: sunny in Paris. All done."
    assert weather["chunks"] > 2
    assert out["asked"]["last"] == "TASK_STATE_INPUT_REQUIRED"
    assert "May I run delete_file" in out["asked"]["question"]
    assert out["wrong"]["last"] == "TASK_STATE_INPUT_REQUIRED"
    assert "answer yes or no (got 'maybe')" in out["wrong"]["question"]
    assert out["answered"]["last"] == "TASK_STATE_COMPLETED"
    assert "deleted /tmp/x.txt" in out["answered"]["text"]
    assert out["fetched"] == {
        "state": "TASK_STATE_COMPLETED",
        "artifact": "Result: deleted /tmp/x.txt. All done.",
    }
    assert out["cancelled"] == "TASK_STATE_CANCELED"


def test_the_js_sdk_reaches_the_agent_with_and_without_a_trailing_slash(child: Served) -> None:
    agent = f"{child.url}/a2a/child"
    out = _node("a2a_slashes.mjs", agent, CHILD_KEY)
    for spelling in ("slashBase", "bareBase", "slashEndpoint"):
        assert out[spelling]["card"] == "child", out
        assert out[spelling]["state"] == "TASK_STATE_COMPLETED", out
        assert out[spelling]["text"] == "Hello! You said: hello", out
    assert out["slashEndpoint"]["url"] == f"{agent}/"
