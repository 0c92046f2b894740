"""The ASGI app: routes, auth, limits, CORS, lifespan."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from ._agents import AgentCatalog
from ._chat_streams import OnDisconnect
from ._history import HistoryPolicy
from ._hub import RunHub
from ._ingress_hub import IngressHub
from ._keys import KeyRing
from ._owners import Owners
from ._problems import Problem, handle_problem, problem_response
from ._rest import rest_routes
from ._service import Service
from ._warmup import warm_up

if TYPE_CHECKING:
    from awaken_run_ingress import RunIngress
    from awaken_runtime.stores import FullStore

__all__ = ["ServerConfig", "create_app"]

PUBLIC_PATHS = ("/", "/openapi.json", "/healthz", "/favicon.ico")
PUBLIC_PREFIXES = ("/static/",)
"""The chat page's own files (script, styles, vendored libraries): no secrets, no key."""
log = logging.getLogger("awaken_server")
STATIC = Path(__file__).parent / "static"


@dataclass
class ServerConfig:
    """Everything ``create_app`` needs (``awaken serve`` fills it from its options)."""

    catalog: AgentCatalog
    store: FullStore
    """A store implementing every port (``awaken_runtime.stores.open_store(url)``)."""
    keys: KeyRing
    max_body: int = 1_000_000
    """Largest accepted request body, in bytes."""
    max_runs_per_key: int = 8
    cors_origins: Sequence[str] = field(default_factory=list)
    """Allowed CORS origins; empty: CORS off."""
    publishers: frozenset[str] = frozenset()
    """Profiles allowed to publish and roll back agent configs (they change every profile's
    agents); empty: nobody, the agent files are all there is."""
    close_store: bool = True
    ingress: RunIngress | None = None
    """A ``awaken_run_ingress.RunIngress``: runs become jobs for ``awaken worker``
    processes sharing ``store``, instead of running in this process."""
    on_disconnect: OnDisconnect = "cancel"
    """A dropped AI SDK or AG-UI stream: ``cancel`` its run at the next boundary, or let
    it ``continue`` in the background (the AI SDK client can then resume the stream)."""
    history: HistoryPolicy = "server"
    """Whose messages a chat runs on: the server's thread (history a client sends is
    checked: appended when it extends the thread, 409 when it differs), or the
    ``client``'s list, authoritative per request."""


class AuthMiddleware:
    """Authenticates every request but the public pages; the principal goes on the scope."""

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if (
            scope["type"] != "http"
            or path in PUBLIC_PATHS
            or path.startswith(PUBLIC_PREFIXES)
            or scope["method"] == "OPTIONS"
        ):
            await self.app(scope, receive, send)
            return
        try:
            principal = self.keys.authenticate(HTTPConnection(scope))
        except Problem as problem:
            await problem_response(problem)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
    fix = "see /openapi.json for the endpoints and their methods"
    # Keep Starlette's headers: a 405 must say which methods are allowed (Allow).
    headers = dict(exc.headers or {})
    return problem_response(
        Problem(exc.status_code, code, str(exc.detail), fix=fix, headers=headers)
    )


async def _internal_error(request: Request, exc: Exception) -> Response:
    # The details go to the log, not to the client.
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    problem = Problem(
        500, "internal-error", "the server failed on this request", fix="see the server's log"
    )
    return problem_response(problem)


async def _index(request: Request) -> Response:
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    if not request.app.state.auth:
        # --no-auth: the page hides its key box and lists the agents at once.
        page = page.replace('<body data-auth="key">', '<body data-auth="none">', 1)
    return HTMLResponse(page)


async def _favicon(_request: Request) -> Response:
    # Browsers ask for it unprompted; the page names its icon itself (static/icon.svg).
    return Response(status_code=204)


async def _health(request: Request) -> Response:
    # ``auth``: whether requests need a key (the page hides its key box when not).
    return JSONResponse(
        {"status": "ok", "warmed": request.app.state.warmed, "auth": request.app.state.auth}
    )


async def _openapi(request: Request) -> Response:
    from ._openapi import openapi_document

    return JSONResponse(openapi_document(str(request.base_url).rstrip("/")))


def create_app(config: ServerConfig) -> Starlette:
    """The server as an ASGI app (run it with uvicorn, or mount it in another app)."""
    from ._agui_run import agui_routes
    from ._aisdk_chat import aisdk_routes

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owners = Owners(config.store)
        await owners.load()
        await config.catalog.load_published(config.store, owners.published)
        service = Service(
            store=config.store,
            catalog=config.catalog,
            owners=owners,
            hub=(
                RunHub(max_runs_per_key=config.max_runs_per_key)
                if config.ingress is None
                else IngressHub(
                    config.ingress, config.store, max_runs_per_key=config.max_runs_per_key
                )
            ),
            runtime=config.catalog.build(config.store),
            on_disconnect=config.on_disconnect,
            history=config.history,
        )
        app.state.service = service
        app.state.warmed = await warm_up(config.catalog)
        if config.ingress is None:  # the workers run the models in ingress mode
            # The executors its agents use (a server without litellm models never
            # imports litellm), their first-call setup off the loop.
            await service.runtime.warm_up(*config.catalog.agent_ids())
        try:
            yield
        finally:
            # In-flight runs stop at their next boundary, checkpoint, and release leases.
            await service.hub.shutdown()
            if config.ingress is not None:
                await config.ingress.close()
            if config.close_store and hasattr(config.store, "close"):
                await config.store.close()

    routes: list[BaseRoute] = [
        Route("/", _index, methods=["GET"]),
        Route("/favicon.ico", _favicon, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route("/healthz", _health, methods=["GET"]),
        Route("/openapi.json", _openapi, methods=["GET"]),
        *rest_routes(),
        *aisdk_routes(),
        *agui_routes(),
    ]
    middleware = [Middleware(AuthMiddleware, keys=config.keys)]
    if config.cors_origins:
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(config.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
                expose_headers=["x-vercel-ai-ui-message-stream"],
            ),
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            Problem: handle_problem,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )
    app.state.max_body = config.max_body
    app.state.publishers = config.publishers
    app.state.auth = config.keys.enabled
    return app
