"""Agent files are read as ``awaken run`` reads them, by ``awaken serve`` too.

Import-path tools are registered, ``[[models]]`` declared by several files
merge (identical: once; different: refused naming both files), and a server
whose agents use no litellm model starts, and answers, without litellm.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from awaken_runtime import AgentConfigError
from awaken_server import AgentCatalog

ECHO_MODEL = '\n[[models]]\nid = "local"\nprovider = "echo"\nmodel = "echo"\n'
TOOL_MODULE = '''
from awaken_runtime import tool


@tool
def shout(text: str) -> str:
    """Shout.

    Args:
        text: What to shout.
    """
    return text.upper()
'''


def _agent(folder: Path, agent_id: str, extra: str = ECHO_MODEL, tools: str = "") -> Path:
    path = folder / f"{agent_id}.toml"
    tool_ids = f"tool_ids = [{tools}]\n" if tools else ""
    path.write_text(f'id = "{agent_id}"\nmodel_binding = "local"\n{tool_ids}{extra}')
    return path


def test_import_path_tools_are_registered_and_identical_models_merge(tmp_path: Path) -> None:
    (tmp_path / "shouting.py").write_text(TOOL_MODULE)
    _agent(tmp_path, "first", tools='"shouting:shout"')
    _agent(tmp_path, "second")
    catalog = AgentCatalog.from_files(tmp_path)
    runtime = catalog.build(_memory())
    assert catalog.agent_ids() == ["first", "second"]
    assert [t.descriptor.id for t in catalog.tools] == ["shout"]
    assert len(catalog.models) == 1, "the same model declared by two files is one model"
    assert [t.id for t in runtime.resolve("first").tools] == ["shout"]


def test_conflicting_models_are_refused_naming_both_files(tmp_path: Path) -> None:
    first = _agent(tmp_path, "first")
    second = _agent(tmp_path, "second", ECHO_MODEL.replace('model = "echo"', 'model = "other"'))
    with pytest.raises(AgentConfigError) as caught:
        AgentCatalog.from_files(tmp_path)
    message = str(caught.value)
    assert "model 'local' is declared differently" in message
    assert str(first) in message and str(second) in message


def _memory() -> object:
    from awaken_runtime.stores import open_store

    return open_store("memory://")


def test_serve_without_litellm_port_0_and_import_path_tools(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "shouting.py").write_text(TOOL_MODULE)
    _agent(agents, "loud", tools='"shouting:shout"')
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    # litellm "not installed": importing it fails as it would without the package.
    (blocker / "litellm.py").write_text("raise ImportError('No module named litellm')\n")
    env = {**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    log = tmp_path / "serve.log"
    cmd = [sys.executable, "-m", "awaken_server", "--agents", str(agents), "--no-auth",
           "--port", "0", "--store", f"sqlite:///{tmp_path / 'a.db'}"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = _listening(process, log)
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/healthz").json() == {"status": "ok", "warmed": [], "auth": False}
            thread = client.post("/v1/threads", json={}).json()["thread_id"]
            done = client.post(
                f"/v1/threads/{thread}/runs", json={"agent_id": "loud", "input": "hi"}
            )
            assert done.status_code == 200, done.text
            assert done.json()["final_text"] == "(echo) hi"
    finally:
        process.terminate()
        process.wait(20)
    assert "LiteLLMNotInstalled" not in log.read_text()


def _listening(process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", log.read_text())
        if found and int(found.group(2)) > 0:
            try:
                if httpx.get(found.group(1) + "/healthz", timeout=1).status_code == 200:
                    return found.group(1)
            except httpx.HTTPError:
                pass
        if process.poll() is not None:
            raise AssertionError(f"awaken serve exited: {log.read_text()}")
        time.sleep(0.2)
    raise AssertionError(f"awaken serve did not say where it listens: {log.read_text()}")
