"""``awaken mcp list``: configured servers, their status and tools, from an agent file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp_rig import TOY

AWAKEN = str(Path(sys.executable).parent / "awaken")


def _agent_file(tmp: Path, marks: Path) -> Path:
    path = tmp / "agent.json"
    path.write_text(
        json.dumps(
            {
                "agent": {
                    "id": "lister",
                    "model_binding": "echo-model",
                    "plugin_ids": ["mcp"],
                    "plugin_config": {
                        "mcp": {
                            "servers": [
                                {
                                    "id": "toy",
                                    "transport": "stdio",
                                    "command": sys.executable,
                                    "args": [TOY],
                                    "env": {"TOY_MARKS": str(marks)},
                                    "allow": ["echo", "pid"],
                                }
                            ]
                        }
                    },
                },
                "models": [{"id": "echo-model", "provider": "echo", "model": "echo"}],
            }
        )
    )
    return path


def _list(tmp: Path, agents: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [AWAKEN, "mcp", "list", "--agents", str(agents), "--store", f"sqlite:///{tmp}/a.db"]
    return subprocess.run(
        [*cmd, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


def test_list_shows_status_and_tools(tmp_path: Path, marks: Path) -> None:
    done = _list(tmp_path, _agent_file(tmp_path, marks), "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["servers"]
    assert row["agent"] == "lister" and row["server"] == "toy"
    assert row["status"] == "connected" and row["transport"] == "stdio"
    assert row["tools"] == ["toy__echo", "toy__pid"]
    text = _list(tmp_path, _agent_file(tmp_path, marks))
    assert "lister: toy (stdio:" in text.stdout and "    toy__echo" in text.stdout


def test_list_reports_a_server_that_does_not_start(tmp_path: Path, marks: Path) -> None:
    path = _agent_file(tmp_path, marks)
    data = json.loads(path.read_text())
    data["agent"]["plugin_config"]["mcp"]["servers"][0]["command"] = str(tmp_path / "missing")
    path.write_text(json.dumps(data))
    done = _list(tmp_path, path, "--json")
    assert done.returncode == 1
    (row,) = json.loads(done.stdout)["servers"]
    assert row["status"].startswith("failed") and "did not start" in row["error"]
    assert row["tools"] == []


def test_list_names_an_unknown_agent(tmp_path: Path, marks: Path) -> None:
    done = _list(tmp_path, _agent_file(tmp_path, marks), "--agent", "nobody")
    assert done.returncode == 2 and "no agent 'nobody'" in done.stderr
