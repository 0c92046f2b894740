"""Real ``awaken a2a serve`` processes on 127.0.0.1 for the A2A tests, and client helpers."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.client import Client
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value

HERE = Path(__file__).parent
"""This folder: agent files and the --setup modules."""
CHILD_KEY = "child-key-0123456789abcdef"
PARENT_KEY = "parent-key-0123456789abcdef"
OTHER_KEY = "other-key-0123456789abcdef0"


@dataclass
class Served:
    """A running ``awaken a2a serve``: its base URL, process and log."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    store: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def card_url(self, agent_id: str) -> str:
        return f"{self.url}/a2a/{agent_id}/.well-known/agent-card.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    tmp: Path,
    agents: str,
    setup: str,
    *,
    keys: str,
    store: str | None = None,
    port: int | None = None,
    env: dict[str, str] | None = None,
    extra: Sequence[str] = (),
) -> Served:
    """Start ``awaken a2a serve`` (``extra``: more of its options) and wait until its index
    of agent cards answers."""
    port = port or free_port()
    full_env = {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "AWAKEN_SERVER_KEYS": keys,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        **(env or {}),
    }
    store = store or f"sqlite:///{tmp / f'awaken-{port}.db'}"
    log = tmp / f"a2a-{port}.log"
    cmd = [
        sys.executable, "-c", "from awaken_runtime.cli._main import main; raise SystemExit(main())",
        "a2a", "serve", "--agents", str(HERE / agents), "--setup", setup,
        "--store", store, "--port", str(port), *extra,
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(cmd, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    served = Served(url, process, log, store, cmd, full_env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"awaken a2a serve exited: {log.read_text()}")
        try:
            if httpx.get(f"{url}/a2a", timeout=1).status_code == 200:  # the index of cards
                return served
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop(served)
    raise RuntimeError(f"awaken a2a serve did not come up: {log.read_text()}")


def stop(served: Served) -> None:
    """Stop the server process (SIGTERM, then SIGKILL)."""
    served.process.terminate()
    try:
        served.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait()


@contextlib.asynccontextmanager
async def connect(served: Served, agent_id: str, key: str) -> AsyncIterator[Client]:
    """An ``a2a-sdk`` client for ``agent_id`` (from its card), with a bearer key."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        card = ParseDict((await http.get(served.card_url(agent_id))).json(), pb.AgentCard())
        yield ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)


def user_message(
    text: str = "", *, task: pb.Task | None = None, data: dict[str, Any] | None = None
) -> pb.SendMessageRequest:
    """A user message (a follow-up to ``task`` if given)."""
    message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER)
    if text:
        message.parts.append(pb.Part(text=text))
    if data is not None:
        value = Value()
        value.struct_value.update(data)
        message.parts.append(pb.Part(data=value))
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    return pb.SendMessageRequest(message=message)


async def collect(stream: AsyncIterator[pb.StreamResponse]) -> list[pb.StreamResponse]:
    """Every response of a stream."""
    return [item async for item in stream]


def final_task(responses: list[pb.StreamResponse], task: pb.Task | None = None) -> pb.Task:
    """The task as the stream left it (the initial task plus every update applied)."""
    out = pb.Task()
    if task is not None:
        out.CopyFrom(task)
    for item in responses:
        if item.HasField("task"):
            out.CopyFrom(item.task)
        elif item.HasField("status_update"):
            out.id = item.status_update.task_id
            out.status.CopyFrom(item.status_update.status)
    return out


def streamed_text(responses: list[pb.StreamResponse]) -> str:
    """The text the stream appended to artifacts."""
    return "".join(
        part.text
        for item in responses
        if item.HasField("artifact_update")
        for part in item.artifact_update.artifact.parts
    )


def status_text(task: pb.Task) -> str:
    """The text of the task's status message."""
    return "\n".join(p.text for p in task.status.message.parts if p.HasField("text"))


def as_json(task: pb.Task) -> dict[str, Any]:
    return MessageToDict(task)
