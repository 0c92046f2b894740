"""The MCP server over streamable HTTP (stateless) and stdio.

HTTP runs the SDK's streamable-HTTP app in stateless mode: every request is
self-contained and no session lives in process memory, so any number of
workers can serve one endpoint behind a load balancer. In front of it sits
the bearer-key check of ``awaken serve`` (``awaken_server.KeyRing``: the
same ``--keys`` file or ``AWAKEN_SERVER_KEYS``); the key's profile is the
profile agent runs use. stdio serves one client on stdin/stdout and needs no
key (whoever can start the process already has its rights); nothing else
may write to stdout there.
"""

from __future__ import annotations

from typing import Any

from mcp.server import Server
from mcp.server.stdio import stdio_server
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from awaken_server import KeyRing, Problem, problem_response

from ._server import PRINCIPAL_STATE

__all__ = ["create_http_app", "serve_stdio"]


def create_http_app(
    server: Server[Any],
    keys: KeyRing,
    *,
    path: str = "/mcp",
    host: str = "127.0.0.1",
    stateless: bool = True,
) -> ASGIApp:
    """The ASGI app: bearer keys, then the SDK's streamable-HTTP endpoint at ``path``.

    ``stateless=False`` keeps sessions in this process (one worker only): a
    handshake-era client then has a back-channel, so a call can ask it
    (elicitation) before it answers.
    """
    inner = server.streamable_http_app(
        streamable_http_path=path, stateless_http=stateless, host=host
    )

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                principal = keys.authenticate(HTTPConnection(scope))
            except Problem as problem:
                await problem_response(problem)(scope, receive, send)
                return
            scope.setdefault("state", {})[PRINCIPAL_STATE] = principal.profile_id
        await inner(scope, receive, send)

    return app


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin/stdout until it closes them."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
