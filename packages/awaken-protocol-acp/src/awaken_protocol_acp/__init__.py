"""Awaken agents over the Agent Client Protocol (ACP), for editors such as Zed.

``awaken acp --agent FILE`` serves an agent file on stdin/stdout;
:class:`AwakenAcpAgent` is the ``acp.Agent`` behind it and
:func:`serve_stdio` runs it for a runtime you built yourself.
"""

from __future__ import annotations

from ._agent import AwakenAcpAgent, Session
from ._build import build_runtime
from ._channel import claim_stdout
from ._permission import OPTIONS, decision_for, permission_call
from ._serve import serve_stdio
from ._updates import stop_reason, updates_for

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
