"""Awaken server: agents over HTTP/SSE for real front ends.

``create_app(ServerConfig(...))`` is the ASGI app; ``awaken serve`` runs it
with uvicorn. The neutral API lives under ``/v1`` (OpenAPI at
``/openapi.json``); ``/v1/agents/{id}/chat`` speaks the AI SDK v6 UI message
stream, ``/v1/agents/{id}/ag-ui`` AG-UI 1.0, and ``/`` is a web chat page.
"""

from ._agents import AgentCatalog, SetupHook, load_agent_files, load_setup
from ._agui import AGUITranscoder
from ._aisdk import UIMessageStreamTranscoder
from ._app import ServerConfig, create_app
from ._keys import KEYS_ENV, KeyConfigError, KeyRing, Principal
from ._problems import Problem, problem_response

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
