"""Starting a real ``awaken serve`` on 127.0.0.1 (a subprocess) for the server tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

HERE = Path(__file__).parent
"""The server tests' folder (agent files, the --setup module)."""
ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef00"
CAROL = "carol-key-0123456789abcdef0"
"""A profile whose remembered approvals no other test depends on."""


@dataclass
class Served:
    """A running server: its URL, keys, and process."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def client(self, key: str | None = ALICE) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    tmp: Path,
    *extra: str,
    keys: str | None = None,
    store: str | None = None,
    agents: Path = HERE / "agents",
) -> Served:
    """Start ``awaken serve`` and wait until it answers (a new SQLite file unless ``store``)."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "AWAKEN_SERVER_KEYS": keys
        if keys is not None
        else f"{ALICE}:alice,{BOB}:bob,{CAROL}:carol",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    log = tmp / f"server-{port}.log"
    cmd = [
        sys.executable, "-m", "awaken_server",
        "--agents", str(agents),
        "--setup", "setup_agents:setup",
        "--store", store or f"sqlite:///{tmp / f'awaken-{port}.db'}",
        "--port", str(port),
        "--publishers", "alice",
        *extra,
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"awaken serve exited: {log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return Served(url, process, log)
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"awaken serve did not start: {log.read_text()}")


def stop_server(served: Served) -> None:
    served.process.terminate()
    try:
        served.process.wait(20)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()
