"""Helpers of the awaken-protocol-acp tests: spawn ``awaken acp`` and record what it sends."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

HERE = Path(__file__).parent
AGENT = HERE / "agents" / "assistant.toml"
LIMIT = 60.0
"""Seconds before a test gives up waiting (a hang guard, not a timing assertion)."""


def awaken() -> list[str]:
    """The ``awaken`` console script of this environment."""
    script = Path(sys.executable).parent / "awaken"
    assert script.exists(), f"no awaken console script next to {sys.executable}"
    return [str(script)]


def agent_env() -> dict[str, str]:
    """The agent process's environment: this one's (plugins, PATH), no network lookups."""
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def acp_args(store: str = "memory://") -> list[str]:
    """``awaken acp`` serving the test agent with its scripted model."""
    return ["acp", "--agent", str(AGENT), "--setup", "acp_setup:setup", "--store", store]


def allow(option: str = "allow_once") -> RequestPermissionResponse:
    """The client's answer picking ``option``."""
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))


def cancelled() -> RequestPermissionResponse:
    """The client's answer for an ask it cancelled."""
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


Answer = Callable[["Recorder", dict[str, Any]], Awaitable[RequestPermissionResponse]]


async def allow_once(recorder: Recorder, ask: dict[str, Any]) -> RequestPermissionResponse:
    """An answer policy: allow every ask once."""
    return allow()


class Recorder:
    """An ACP client that records every update and ask, in arrival order, as wire JSON."""

    def __init__(self, answer: Answer = allow_once) -> None:
        self.answer = answer
        self.log: list[dict[str, Any]] = []
        self.conn: ClientSideConnection | None = None
        self._changed = asyncio.Condition()

    async def _record(self, item: dict[str, Any]) -> None:
        async with self._changed:
            self.log.append(item)
            self._changed.notify_all()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        await self._record({"sessionId": session_id, **data})

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        ask = {
            "ask": True,
            "sessionId": session_id,
            "toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            "options": [o.model_dump(mode="json", by_alias=True) for o in options],
        }
        await self._record(ask)
        return await self.answer(self, ask)

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first logged item matching ``predicate``, waiting for it if need be."""
        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: any(predicate(i) for i in self.log)), LIMIT
            )
            return next(i for i in self.log if predicate(i))

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Logged updates of one ``sessionUpdate`` kind."""
        return [i for i in self.log if i.get("sessionUpdate") == kind]

    def text(self) -> str:
        """The agent's message chunks joined."""
        return "".join(i["content"]["text"] for i in self.of("agent_message_chunk"))

    def clear(self) -> None:
        """Forget what was logged (between prompts)."""
        self.log.clear()


@dataclass
class Agent:
    """A running ``awaken acp`` with the client connected to it."""

    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    stderr: Path
    initialized: Any

    async def session(self) -> str:
        """A new session's id."""
        response = await self.conn.new_session(cwd=str(HERE), mcp_servers=[])
        return str(response.session_id)

    async def prompt(self, session_id: str, text: str) -> str:
        """Prompt and return the stop reason."""
        response = await asyncio.wait_for(
            self.conn.prompt(session_id=session_id, prompt=[text_block(text)]), LIMIT
        )
        return str(response.stop_reason)


@asynccontextmanager
async def spawned(
    recorder: Recorder, tmp_path: Path, store: str = "memory://"
) -> AsyncIterator[Agent]:
    """``awaken acp`` spawned through ``acp.spawn_agent_process``, initialized."""
    stderr = tmp_path / f"stderr-{len(list(tmp_path.glob('stderr-*')))}.txt"
    with stderr.open("wb") as err:
        async with spawn_agent_process(
            recorder,
            *awaken(),
            *acp_args(store),
            cwd=HERE,
            env=agent_env(),
            transport_kwargs={"stderr": err},
        ) as (conn, process):
            recorder.conn = conn
            initialized = await asyncio.wait_for(conn.initialize(protocol_version=1), LIMIT)
            yield Agent(conn, process, stderr, initialized)
