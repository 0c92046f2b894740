"""``awaken serve --setup setup_agents:setup`` for the tests: a scripted model and two tools.

The model reacts to the conversation: "weather" calls ``get_weather`` (allowed),
"delete" calls ``delete_file`` (the permissions plugin asks a human), "think"
streams reasoning first, "slow" streams many chunks, "crawl" streams them
slowly (a client can drop and resume mid-answer), "hold" stalls after its
first chunks for 30 s (only a cancel ends it sooner), "dice" answers with a
new number each time (a regenerate is a new answer), "recall" lists the
user and assistant messages the model was sent; after a tool result it
answers with that result.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

from awaken_runtime import (
    AgentRuntimeBuilder,
    InferenceRequest,
    ScriptedExecutor,
    ScriptedTurn,
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
async def delete_file(path: str) -> str:
    """Delete a file (asks for permission).

    Args:
        path: The file to delete.
    """
    await asyncio.sleep(0)
    return f"deleted {path}"


_ROLLS = itertools.count(1)


def _turn(request: InferenceRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if last.role == "tool":
        return f"Result: {last.text}. All done."
    text = (last.text or "").lower()
    if "weather" in text:
        return ScriptedTurn.call("get_weather", {"city": "Paris"}, text="Let me check.")
    if "delete" in text:
        return ScriptedTurn.call("delete_file", {"path": "/tmp/x.txt"})
    if "think" in text:
        return ScriptedTurn(reasoning="Pondering the question.", text="I thought about it.")
    if "slow" in text:
        return " ".join(f"word{i}" for i in range(80))
    if "crawl" in text:
        return " ".join(f"step{i}" for i in range(40))
    if "dice" in text:
        return f"Roll number {next(_ROLLS)}"
    if "recall" in text:
        seen = [f"{m.role}: {m.text}" for m in request.messages if m.role in ("user", "assistant")]
        return "Seen: " + " | ".join(seen)
    if "hold" in text:
        return " ".join(f"held{i}" for i in range(30))
    return f"Hello! You said: {last.text}"


HOLD_AFTER = 4
"""Chunks a "hold" answer streams before it stalls."""


class PacedExecutor(ScriptedExecutor):
    """Streams "slow" and "crawl" answers with a pause between chunks, so a client sees
    them arrive; a "hold" answer stalls mid-stream like a model that hangs."""

    async def stream(self, request: InferenceRequest) -> AsyncIterator[Any]:
        text = (request.messages[-1].text or "").lower()
        pause = 0.005 if "slow" in text else 0.02 if "crawl" in text else 0.0
        sent = 0
        async for item in super().stream(request):
            yield item
            sent += 1
            if "hold" in text and sent == HOLD_AFTER:
                await asyncio.sleep(30)
            if pause:
                await asyncio.sleep(pause)


def setup(builder: AgentRuntimeBuilder) -> None:
    """Add the scripted provider and the tools."""
    executor = PacedExecutor([_turn], repeat=True, chunk_size=6)
    executor.record_requests = False
    builder.with_provider("scripted", executor)
    builder.with_tool(get_weather)
    builder.with_tool(delete_file)
