"""Awaken A2A: awaken agents over the A2A protocol, and remote A2A agents as delegates.

``create_a2a_app(runtime, agent_ids, base_url=...)`` serves agents (``awaken
a2a serve`` from the shell); ``A2ADelegate(card_url, token=...)`` with
``AgentRuntimeBuilder.with_remote_delegate(agent_id, ...)`` makes a remote A2A
agent a delegate that ``agent_run`` reaches like a local one.
"""

from ._answers import AnswerError
from ._app import CARD_PATH, agent_card, create_a2a_app
from ._delegate import A2ADelegate
from ._executor import AwakenAgentExecutor
from ._tasks import AwakenTaskStore

__all__ = [
    "CARD_PATH",
    "A2ADelegate",
    "AnswerError",
    "AwakenAgentExecutor",
    "AwakenTaskStore",
    "agent_card",
    "create_a2a_app",
]
