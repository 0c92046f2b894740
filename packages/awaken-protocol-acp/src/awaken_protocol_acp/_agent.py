"""``AwakenAcpAgent``: an awaken agent behind ACP's agent side (``acp.Agent``).

A session is a thread: ``session/new`` names a fresh thread id, every prompt
of the session runs in it, and with a persistent store ``session/load``
brings an earlier session back (its history replayed as updates). A session
runs one prompt at a time; a second prompt while one runs is refused, and
``session/cancel`` ends the running one.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)

from awaken_runtime import Runtime, ScopeBinding, ThreadBusy

from ._history import history_updates
from ._prompt import prompt_text
from ._turn import Client, Turn

__all__ = ["AwakenAcpAgent", "Session"]

log = logging.getLogger("awaken_protocol_acp")

UNKNOWN_SESSION = -32002
"""JSON-RPC code for a session id this agent does not know (ACP's "resource not found")."""
SESSION_BUSY = -32000
"""JSON-RPC code for a prompt sent while the session's previous prompt still runs."""


def _version() -> str:
    try:
        return version("awaken-protocol-acp")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


@dataclass
class Session:
    """One ACP session: its thread (``session_id``), working directory and running turn."""

    session_id: str
    cwd: str
    turn: Turn | None = field(default=None, repr=False)


class AwakenAcpAgent:
    """Serves one agent of ``runtime`` to one ACP client (pass it to ``acp.run_agent``)."""

    def __init__(self, runtime: Runtime, agent_id: str) -> None:
        runtime.resolve(agent_id)  # an unknown id fails here, not at the first prompt
        self.runtime = runtime
        self.agent_id = agent_id
        self.sessions: dict[str, Session] = {}
        self._client: Client | None = None

    def on_connect(self, conn: Any) -> None:
        """Called by ``acp`` with the connection to the client (updates, permission asks)."""
        self._client = conn

    @property
    def client(self) -> Client:
        """The connected client; ``RuntimeError`` before ``acp`` connected one."""
        if self._client is None:
            raise RuntimeError("no ACP client is connected; serve this agent with acp.run_agent")
        return self._client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """``initialize``: the protocol version both speak and what this agent offers."""
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
            ),
            agent_info=Implementation(name="awaken", title=self.agent_id, version=_version()),
            auth_methods=[],
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        """``session/new``: a new thread for the session."""
        if mcp_servers:
            log.warning(
                "session/new: %d MCP server(s) from the client are ignored (the agent file "
                "declares its own, with awaken-mcp)",
                len(mcp_servers),
            )
        session = Session(f"thread_{uuid.uuid4().hex}", cwd)
        self.sessions[session.session_id] = session
        return NewSessionResponse(session_id=session.session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """``session/load``: continue a session kept in the store; its history is replayed."""
        if session_id in self.sessions and self.sessions[session_id].turn is not None:
            raise RequestError(
                SESSION_BUSY, f"session {session_id!r} is running a prompt; it is loaded already"
            )
        snapshot = await self.runtime.store.load(ScopeBinding(session_id, "default", "default"))
        if not snapshot.messages:
            raise RequestError(
                UNKNOWN_SESSION,
                f"unknown session {session_id!r}: the store has no such thread; start one with "
                f"session/new (sessions outlive the process only with a persistent --store)",
                {"sessionId": session_id},
            )
        for update in history_updates(snapshot.messages):
            await self.client.session_update(session_id, update)
        self.sessions[session_id] = Session(session_id, cwd)
        return LoadSessionResponse()

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(
                UNKNOWN_SESSION,
                f"unknown session {session_id!r}: create one with session/new "
                f"(or session/load one kept in the store)",
                {"sessionId": session_id},
            )
        return session

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        """``session/prompt``: run the agent on the prompt, streaming ``session/update``."""
        session = self._session(session_id)
        if session.turn is not None:
            raise RequestError(
                SESSION_BUSY,
                f"session {session_id!r} is already running a prompt; wait for its response "
                f"or send session/cancel, then prompt again",
                {"sessionId": session_id},
            )
        text = prompt_text(prompt)
        turn = Turn(self.runtime, self.agent_id, self.client, session_id)
        session.turn = turn
        try:
            return await turn.run(text)
        except ThreadBusy as exc:  # the thread's lease is held elsewhere (another process)
            raise RequestError(SESSION_BUSY, str(exc), {"sessionId": session_id}) from None
        finally:
            session.turn = None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel`` (a notification): end the session's running prompt, if any."""
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %r ignored", session_id)
            return
        if session.turn is not None:
            session.turn.cancel()

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        """``authenticate``: nothing to do; this agent offers no auth methods."""
        raise RequestError(-32602, f"unknown auth method {method_id!r}: this agent needs none")
