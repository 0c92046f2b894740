"""The official ACP TypeScript SDK (``@agentclientprotocol/sdk`` 2.x) driving ``awaken acp``.

js/acp_client.mjs uses the package pinned by js/package-lock.json
(``npm ci --prefix tests/protocol_acp/js``, which ``dev.py test`` and .ci/run do).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp_rig import HERE, acp_args, agent_env, awaken

JS = HERE / "js"


def _node(tmp_path: Path) -> dict[str, Any]:
    if not (JS / "node_modules").is_dir() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node or tests/protocol_acp/js/node_modules missing: `npm ci` them")
        pytest.skip("run `npm ci --prefix tests/protocol_acp/js` (needs Node 20)")
    allowed, rejected = tmp_path / "allowed.txt", tmp_path / "rejected.txt"
    allowed.write_text("x")
    rejected.write_text("x")
    env = {
        **agent_env(),
        "AWAKEN_ACP_COMMAND": json.dumps([*awaken(), *acp_args()]),
        "AWAKEN_ACP_CWD": str(HERE),
        "AWAKEN_ACP_ALLOWED": str(allowed),
        "AWAKEN_ACP_REJECTED": str(rejected),
    }
    done = subprocess.run(
        ["node", "acp_client.mjs"], cwd=JS, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"acp_client.mjs failed:\n{done.stderr}\n{done.stdout}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["paths"] = {"allowed": str(allowed), "rejected": str(rejected)}
    return result


def test_the_typescript_sdk_runs_a_tool_call_permission_asks_and_a_cancel(
    tmp_path: Path,
) -> None:
    out = _node(tmp_path)
    assert out["init"] == {"protocolVersion": 1, "name": "awaken", "loadSession": True}
    assert out["tool"] == {
        "stopReason": "end_turn",
        "text": "Let me check.Result: sunny in Paris. All done.",
        "chunks": out["tool"]["chunks"],
        "title": "get_weather(city='Paris')",
        "status": "pending",
        "resultStatus": "completed",
        "sameId": True,
        "output": "sunny in Paris",
    }
    assert out["tool"]["chunks"] > 2
    kinds = ["allow_once", "allow_always", "reject_once", "reject_always"]
    allowed = out["paths"]["allowed"]
    assert out["allowed"] == {
        "stopReason": "end_turn",
        "fileExists": False,
        "asks": 1,
        "askKinds": kinds,
        "askMatchesCall": True,
        "statuses": ["in_progress", "completed"],
        "text": f"Result: deleted {allowed}. All done.",
    }
    assert out["rejected"]["fileExists"] is True
    assert out["rejected"]["statuses"] == ["failed"]
    assert out["rejected"]["stopReason"] == "end_turn" and out["rejected"]["asks"] == 1
    assert out["cancel"] == {"stopReason": "cancelled", "last": "failed"}
    assert out["after"] == {"stopReason": "end_turn", "text": "Hello! You said: hello again"}
