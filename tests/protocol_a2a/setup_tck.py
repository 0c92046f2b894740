"""``--setup setup_tck:setup``: the scripted model of the agent the A2A TCK talks to.

Every message gets a text answer quoting it, so each TCK task completes with a
streamed ``response`` artifact. The TCK's own test server picks behaviours
(input-required, file artifacts, a message instead of a task) by the prefix of
the message id, which never reaches a model: those tests are listed with their
reason in ``tck_expected.toml``.
"""

from __future__ import annotations

from awaken_runtime import AgentRuntimeBuilder, InferenceRequest, ScriptedExecutor


def _answer(request: InferenceRequest) -> str:
    said = (request.messages[-1].text or "").strip()
    return f"Hello from awaken. You said: {said}"


def setup(builder: AgentRuntimeBuilder) -> None:
    """Add the scripted provider."""
    executor = ScriptedExecutor([_answer], repeat=True, chunk_size=8)
    executor.record_requests = False
    builder.with_provider("scripted", executor)
