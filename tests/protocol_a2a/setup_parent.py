"""``--setup setup_parent:setup``: the parent's scripted model and its remote delegate.

The child is the agent at ``$CHILD_CARD_URL`` (an ``awaken a2a serve`` of
another process), reached with the bearer key ``$CHILD_TOKEN``. The model
calls ``agent_run`` for "delegate: TEXT" (the child gets TEXT) and answers
with the child's result after it.
"""

from __future__ import annotations

import os

from awaken_protocol_a2a import A2ADelegate
from awaken_runtime import AgentRuntimeBuilder, InferenceRequest, ScriptedExecutor, ScriptedTurn


def _turn(request: InferenceRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if last.role == "tool":
        return f"Parent got: {last.text}"
    text = last.text or ""
    if text.startswith("delegate:"):
        prompt = text.removeprefix("delegate:").strip()
        return ScriptedTurn.call("agent_run", {"agent_id": "child", "prompt": prompt})
    return f"Parent says: {text}"


def setup(builder: AgentRuntimeBuilder) -> None:
    """Add the scripted provider and the remote child."""
    executor = ScriptedExecutor([_turn], repeat=True, chunk_size=8)
    executor.record_requests = False
    builder.with_provider("scripted", executor)
    delegate = A2ADelegate(
        os.environ["CHILD_CARD_URL"], token=os.environ.get("CHILD_TOKEN"), attempts=2, backoff=0.05
    )
    builder.with_remote_delegate("child", delegate)
