"""Awaken agents over the Agent Client Protocol (ACP), for editors such as Zed.

``awaken acp --agent FILE`` serves an agent file on stdin/stdout;
:class:`AwakenAcpAgent` is the ``acp.Agent`` behind it and
:func:`serve_stdio` runs it for a runtime you built yourself.

The names load on first use: the ``awaken`` command imports this package to
add its ``acp`` subcommand, and ``acp``'s schema takes most of a second to
import, which no other subcommand should pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awaken_runtime._lazy import lazy_names

if TYPE_CHECKING:
    from ._agent import AwakenAcpAgent, Session
    from ._build import build_runtime
    from ._channel import claim_stdout
    from ._permission import OPTIONS, decision_for, permission_call
    from ._serve import serve_stdio
    from ._updates import stop_reason, updates_for

_HOMES = {
    "OPTIONS": "._permission",
    "AwakenAcpAgent": "._agent",
    "Session": "._agent",
    "build_runtime": "._build",
    "claim_stdout": "._channel",
    "decision_for": "._permission",
    "permission_call": "._permission",
    "serve_stdio": "._serve",
    "stop_reason": "._updates",
    "updates_for": "._updates",
}

__all__ = [
    "OPTIONS",
    "AwakenAcpAgent",
    "Session",
    "build_runtime",
    "claim_stdout",
    "decision_for",
    "permission_call",
    "serve_stdio",
    "stop_reason",
    "updates_for",
]

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
