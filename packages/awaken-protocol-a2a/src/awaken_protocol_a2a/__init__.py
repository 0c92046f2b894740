"""Awaken A2A: awaken agents over the A2A protocol, and remote A2A agents as delegates.

``create_a2a_app(runtime, agent_ids, base_url=...)`` serves agents (``awaken
a2a serve`` from the shell); ``A2ADelegate(card_url, token=...)`` with
``AgentRuntimeBuilder.with_remote_delegate(agent_id, ...)`` makes a remote A2A
agent a delegate that ``agent_run`` reaches like a local one.

The names load on first use: the ``awaken`` command imports this package to
add its ``a2a`` subcommand, and the A2A SDK takes almost half a second to
import, which no other subcommand should pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awaken_runtime._lazy import lazy_names

if TYPE_CHECKING:
    from ._answers import AnswerError
    from ._app import CARD_PATH, agent_card, create_a2a_app
    from ._delegate import A2ADelegate
    from ._executor import AwakenAgentExecutor
    from ._tasks import AwakenTaskStore

_HOMES = {
    "A2ADelegate": "._delegate",
    "AnswerError": "._answers",
    "AwakenAgentExecutor": "._executor",
    "AwakenTaskStore": "._tasks",
    "CARD_PATH": "._app",
    "agent_card": "._app",
    "create_a2a_app": "._app",
}

__all__ = [
    "CARD_PATH",
    "A2ADelegate",
    "AnswerError",
    "AwakenAgentExecutor",
    "AwakenTaskStore",
    "agent_card",
    "create_a2a_app",
]

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
