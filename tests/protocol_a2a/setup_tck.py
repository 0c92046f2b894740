"""``--setup setup_tck:setup``: the scripted models of the agents the A2A TCK talks to.

The TCK's own test server picks a behaviour (complete, input-required, file
artifacts, a message instead of a task) from the prefix of the message id,
which never reaches a model. Awaken serves two agents instead and the TCK
runs against each: ``tck`` answers every message in text (its tasks
complete), ``tck-asks`` asks the user a question first (its tasks wait for
input until a follow-up answers). What each run cannot provide is listed
with its reason in ``tck_expected.toml``.
"""

from __future__ import annotations

from setup_child import ask_user

from awaken_runtime import AgentRuntimeBuilder, InferenceRequest, ScriptedExecutor, ScriptedTurn


def _answer(request: InferenceRequest) -> str:
    said = (request.messages[-1].text or "").strip()
    return f"Hello from awaken. You said: {said}"


def _ask_first(request: InferenceRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if last.role == "tool":
        return f"Thanks, noted: {last.text}"
    return ScriptedTurn.call("ask_user", {"question": "What should I do with that?"})


def setup(builder: AgentRuntimeBuilder) -> None:
    """Add the two scripted providers and the asking tool."""
    for name, turn in (("scripted", _answer), ("scripted_asks", _ask_first)):
        executor = ScriptedExecutor([turn], repeat=True, chunk_size=8)
        executor.record_requests = False
        builder.with_provider(name, executor)
    builder.with_tool(ask_user)
