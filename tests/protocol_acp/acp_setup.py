"""``awaken acp --setup acp_setup:setup`` for the tests: the scripted model of assistant.toml.

The model reacts to the last message: "delete PATH" calls ``delete_file`` (asked),
"deploy PATH" calls ``deploy`` (a tool that asks for approval itself), "later N"
calls ``later`` (scheduled N seconds ahead), "weather" calls ``get_weather``, "wait"
calls ``wait`` (for cancels), "noise" calls ``noisy``, "question" calls ``ask_user``
(a question ACP cannot carry), "explode" fails, "think" streams reasoning first;
after a tool result it answers with that result; anything else is echoed back.
"""

from __future__ import annotations

from awaken_runtime import AgentRuntimeBuilder, InferenceRequest, ScriptedExecutor, ScriptedTurn

print("SETUP-NOISE")  # stdout is the protocol channel: this must end up on stderr


def _turn(request: InferenceRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if last.role == "tool":
        return f"Result: {last.text}. All done."
    text = last.text or ""
    words = text.split()
    # Commands with a path first: a pytest tmp_path may hold any word below.
    if words and words[0] == "delete":
        return ScriptedTurn.call("delete_file", {"path": words[1]})
    if words and words[0] == "deploy":
        return ScriptedTurn.call("deploy", {"target": words[1]})
    if words and words[0] == "later":
        return ScriptedTurn.call("later", {"seconds": float(words[1])})
    if "weather" in text:
        return ScriptedTurn.call("get_weather", {"city": "Paris"}, text="Let me check.")
    if "wait" in text:
        return ScriptedTurn.call("wait", {"seconds": 60})
    if "noise" in text:
        return ScriptedTurn.call("noisy", {})
    if "question" in text:
        return ScriptedTurn.call("ask_user", {"question": "Which one?"})
    if "explode" in text:
        raise RuntimeError("the scripted model broke")
    if "think" in text:
        return ScriptedTurn(reasoning="Pondering the question.", text="I thought about it.")
    return f"Hello! You said: {text}"


def setup(builder: AgentRuntimeBuilder) -> None:
    """Register the scripted provider the agent file's model names."""
    executor = ScriptedExecutor([_turn], repeat=True, chunk_size=6)
    executor.record_requests = False  # a long session keeps no copy of every request
    builder.with_provider("scripted", executor)
