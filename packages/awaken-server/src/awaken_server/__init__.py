"""Awaken server: agents over HTTP/SSE for real front ends.

``create_app(ServerConfig(...))`` is the ASGI app; ``awaken serve`` runs it
with uvicorn. The neutral API lives under ``/v1`` (OpenAPI at
``/openapi.json``); ``/v1/agents/{id}/chat`` speaks the AI SDK v6 UI message
stream, ``/v1/agents/{id}/ag-ui`` AG-UI 1.0, and ``/`` is a web chat page.

The names load on first use: the ``awaken`` command imports this package to
add its ``serve`` subcommand, and the web stack takes a quarter of a second
to import, which no other subcommand should pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awaken_runtime._lazy import lazy_names

if TYPE_CHECKING:
    from ._agents import AgentCatalog, SetupHook, load_agent_files, load_setup
    from ._agui import AGUITranscoder
    from ._aisdk import UIMessageStreamTranscoder
    from ._app import ServerConfig, create_app
    from ._keys import KEYS_ENV, KeyConfigError, KeyRing, Principal
    from ._problems import Problem, problem_response

_HOMES = {
    "AGUITranscoder": "._agui",
    "AgentCatalog": "._agents",
    "KEYS_ENV": "._keys",
    "KeyConfigError": "._keys",
    "KeyRing": "._keys",
    "Principal": "._keys",
    "Problem": "._problems",
    "ServerConfig": "._app",
    "SetupHook": "._agents",
    "UIMessageStreamTranscoder": "._aisdk",
    "create_app": "._app",
    "load_agent_files": "._agents",
    "load_setup": "._agents",
    "problem_response": "._problems",
}

__all__ = [
    "KEYS_ENV",
    "AGUITranscoder",
    "AgentCatalog",
    "KeyConfigError",
    "KeyRing",
    "Principal",
    "Problem",
    "ServerConfig",
    "SetupHook",
    "UIMessageStreamTranscoder",
    "create_app",
    "load_agent_files",
    "load_setup",
    "problem_response",
]

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
