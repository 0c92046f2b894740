"""``--setup setup_child:setup``: a scripted model and four tools for the child agent.

The model reacts to the last message: "weather" calls ``get_weather``
(allowed), "delete" calls ``delete_file`` (the permissions plugin asks a
human), "slow" calls ``wait_a_bit`` (1.5 s), "ask" calls ``ask_user`` (a
question whose answer is the result); after a tool result it answers with
that result; otherwise it echoes.
"""

from __future__ import annotations

import asyncio

from awaken_runtime import (
    AgentRuntimeBuilder,
    AwaitReason,
    InferenceRequest,
    ScriptedExecutor,
    ScriptedTurn,
    SuspendCall,
    tool,
)


@tool
def get_weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


@tool
def delete_file(path: str) -> str:
    """Delete a file (asks for permission).

    Args:
        path: The file to delete.
    """
    return f"deleted {path}"


@tool
async def wait_a_bit(seconds: float) -> str:
    """Wait, then say so (a long call, so a cancel can arrive while it runs).

    Args:
        seconds: How long to wait.
    """
    await asyncio.sleep(seconds)
    return f"waited {seconds}s"


@tool
def ask_user(question: str) -> str:
    """Ask the user a question; the answer is the result.

    Args:
        question: What to ask.
    """
    raise SuspendCall(AwaitReason.USER_INPUT, {"question": question})


def _turn(request: InferenceRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if last.role == "tool":
        return f"Result: {last.text}. All done."
    text = (last.text or "").lower()
    if "weather" in text:
        return ScriptedTurn.call("get_weather", {"city": "Paris"}, text="Let me check.")
    if "delete" in text:
        return ScriptedTurn.call("delete_file", {"path": "/tmp/x.txt"})
    if "slow" in text:
        return ScriptedTurn.call("wait_a_bit", {"seconds": 1.5})
    if "ask" in text:
        return ScriptedTurn.call("ask_user", {"question": "Which colour?"})
    return f"Hello! You said: {last.text}"


def setup(builder: AgentRuntimeBuilder) -> None:
    """Add the scripted provider and the tools."""
    executor = ScriptedExecutor([_turn], repeat=True, chunk_size=6)
    executor.record_requests = False
    builder.with_provider("scripted", executor)
    builder.with_tool(get_weather)
    builder.with_tool(delete_file)
    builder.with_tool(ask_user)
    builder.with_tool(wait_a_bit)
