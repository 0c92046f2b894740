"""The official ``@a2a-js/sdk`` client (pinned by js/package-lock.json) driving an awaken agent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from a2a_rig import CHILD_KEY, HERE, Served

JS = HERE / "js"


def test_the_js_sdk_streams_answers_and_cancels_through_input_required(child: Served) -> None:
    if not (JS / "node_modules").is_dir() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node or tests/protocol_a2a/js/node_modules missing: `npm ci` them")
        pytest.skip("run `npm ci --prefix tests/protocol_a2a/js` (needs Node 20)")
    done = subprocess.run(
        ["node", "a2a_client.mjs", child.card_url("child"), CHILD_KEY],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"a2a_client.mjs failed:\n{done.stderr}\n{done.stdout}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
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
