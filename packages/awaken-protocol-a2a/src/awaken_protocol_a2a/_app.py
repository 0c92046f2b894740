"""``create_a2a_app``: awaken agents as A2A agents (JSON-RPC + SSE), one endpoint each.

Agent ``ID`` is served at ``/a2a/ID`` (JSON-RPC: ``SendMessage``,
``SendStreamingMessage``, ``GetTask``, ``ListTasks``, ``CancelTask``,
``SubscribeToTask``) with its card at ``/a2a/ID/.well-known/agent-card.json``
(also answered by ``GET /a2a/ID``); ``GET /a2a`` lists the agents and their
cards. Every path answers with or without a trailing slash (a redirect would
lose a POST's body with clients that do not follow it).
The SDK's ``DefaultRequestHandler`` does the protocol; tasks live in the
runtime's store (``AwakenTaskStore``). Auth is awaken-server's bearer-key
scheme (``KeyRing``: ``--keys FILE`` or ``AWAKEN_SERVER_KEYS``): every
request but the cards needs a key, and the key's profile owns the tasks and
threads it creates (another key's task is "not found").
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes
from a2a.types import a2a_pb2 as pb
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from awaken_server import KeyRing, Problem, problem_response

from ._cards import CardIndex, CardResource
from ._executor import AwakenAgentExecutor
from ._jsonrpc import json_endpoint
from ._tasks import PROFILE_STATE, AwakenTaskStore

if TYPE_CHECKING:
    from awaken_runtime import Runtime

__all__ = ["CARD_PATH", "agent_card", "create_a2a_app"]

CARD_PATH = "/.well-known/agent-card.json"


def agent_card(runtime: Runtime, agent_id: str, url: str, *, keys: bool) -> pb.AgentCard:
    """The card of ``agent_id`` served at ``url`` (its JSON-RPC endpoint)."""
    config = runtime.resolve(agent_id).config
    about = config.instructions.strip().splitlines()[0] if config.instructions.strip() else ""
    card = pb.AgentCard(
        name=agent_id,
        description=about or f"awaken agent {agent_id}",
        version="0.1.0",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[
            pb.AgentSkill(
                id=agent_id, name=agent_id, description=about or agent_id, tags=["awaken"]
            )
        ],
    )
    if keys:
        card.security_schemes["bearer"].http_auth_security_scheme.scheme = "bearer"
        card.security_requirements.append(
            pb.SecurityRequirement(schemes={"bearer": pb.StringList()})
        )
    return card


class _Profiles(DefaultServerCallContextBuilder):
    """Puts the profile of the caller's key into the call context."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        # The SDK reads headers (A2A-Version) from here; the bearer key must not travel further.
        context.state.get("headers", {}).pop("authorization", None)
        context.state[PROFILE_STATE] = request.scope.get("state", {}).get(PROFILE_STATE, "default")
        return context


class _Slashes:
    """Serves ``/a2a/ID/`` as ``/a2a/ID``: one trailing slash is dropped before routing.

    Starlette would answer a 307 redirect instead, which strict clients do not
    follow for a POST (the A2A TCK's JSON-RPC client fails on it).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            scope = dict(scope)
            scope["path"] = path[:-1]
            raw = scope.get("raw_path")
            if isinstance(raw, bytes) and raw.endswith(b"/"):
                scope["raw_path"] = raw[:-1]
        await self.app(scope, receive, send)


class _Auth:
    """The bearer-key check of ``awaken serve`` in front of every path but the cards."""

    def __init__(self, app: ASGIApp, keys: KeyRing, public: frozenset[str]) -> None:
        self.app = app
        self.keys = keys
        self.public = public
        """Paths whose GET (and HEAD) is open to anyone: the cards and the index."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        public = scope["type"] != "http" or (
            method in ("GET", "HEAD") and str(scope.get("path", "")) in self.public
        )
        if not public and method != "OPTIONS":
            try:
                principal = self.keys.authenticate(HTTPConnection(scope))
            except Problem as problem:
                await problem_response(problem)(scope, receive, send)
                return
            scope.setdefault("state", {})[PROFILE_STATE] = principal.profile_id
        await self.app(scope, receive, send)


def create_a2a_app(
    runtime: Runtime,
    agent_ids: Sequence[str],
    *,
    base_url: str,
    keys: KeyRing | None = None,
    close_runtime: bool = False,
    idle_release: float | None = 300.0,
    card_max_age: int = 300,
) -> ASGIApp:
    """The A2A server of ``agent_ids`` as an ASGI app reachable at ``base_url``.

    ``keys`` defaults to auth off (``KeyRing(None)``: every caller is profile
    ``default``). A task waiting for input longer than ``idle_release`` seconds
    leaves memory (its follow-up reads it back from the store). Clients may
    cache a card for ``card_max_age`` seconds, then revalidate it (ETag,
    Last-Modified). Mount the app in another Starlette app or run it with uvicorn.
    """
    if card_max_age < 0:
        raise ValueError(f"card_max_age is {card_max_age}; give 0 or more seconds")
    ring = keys if keys is not None else KeyRing(None)
    base = base_url.rstrip("/")
    built = datetime.now(UTC)
    routes: list[BaseRoute] = []
    handlers: list[DefaultRequestHandler] = []
    cards: dict[str, CardResource] = {}
    for agent_id in agent_ids:
        path = f"/a2a/{agent_id}"
        card = agent_card(runtime, agent_id, base + path, keys=ring.enabled)
        handler = DefaultRequestHandler(
            AwakenAgentExecutor(runtime, agent_id),
            AwakenTaskStore(runtime, agent_id),
            card,
            interrupted_task_timeout=idle_release,
        )
        handlers.append(handler)
        cards[agent_id] = resource = CardResource(card, max_age=card_max_age, modified=built)
        routes.append(Route(path + CARD_PATH, resource.respond, methods=["GET"]))
        routes.append(Route(path, resource.respond, methods=["GET"]))
        for rpc in create_jsonrpc_routes(handler, rpc_url=path, context_builder=_Profiles()):
            if not isinstance(rpc, Route):  # an a2a-sdk that builds other route types
                raise TypeError(f"a2a-sdk gave a {type(rpc).__name__} for {path}, not a Route")
            routes.append(Route(rpc.path, json_endpoint(rpc.endpoint), methods=["POST"]))
    index = CardIndex(cards, {a: f"{base}/a2a/{a}{CARD_PATH}" for a in cards})
    routes.append(Route("/a2a", index.listing, methods=["GET"]))
    routes.append(Route(CARD_PATH, index.root_card, methods=["GET"]))
    routes.append(Route("/a2a" + CARD_PATH, index.root_card, methods=["GET"]))
    public = frozenset(
        r.path for r in routes if isinstance(r, Route) and "GET" in (r.methods or ())
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            for handler in handlers:
                await handler.aclose()
            if close_runtime:
                await runtime.aclose()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.router.redirect_slashes = False  # _Slashes already serves both spellings
    return _Slashes(_Auth(app, ring, public))
