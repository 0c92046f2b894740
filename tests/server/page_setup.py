"""``awaken serve --setup page_setup:setup`` for the chat page test: a scripted model.

"markdown" answers with markdown and hostile HTML (a ``<script>``, an ``onerror``
image, a ``javascript:`` link) that must stay inert; "remove" calls ``remove_file``
(the permissions plugin asks for approval); "city" calls ``ask_city``, which asks
its user a question (a ``USER_INPUT`` ticket); "think" reasons first; "hold"
streams a few chunks and then stalls for 30 s (only a cancel ends it sooner);
after a tool result the model answers with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from awaken_runtime import (
    AgentRuntimeBuilder,
    AwaitReason,
    InferenceRequest,
    ScriptedExecutor,
    ScriptedTurn,
    SuspendCall,
    tool,
)

HOSTILE = (
    "# Report\n\nThis is **bold**, this is `code`.\n\n- first\n- second\n\n"
    "<script>window.pwned = 'script'</script>\n\n"
    '<img src="x" onerror="window.pwned = \'img\'">\n\n'
    "[a bad link](javascript:window.pwned='link') and [a good one](https://example.org/)\n"
)
HOLD_AFTER = 3
"""Chunks a "hold" answer streams before it stalls."""


@tool
async def remove_file(path: str) -> str:
    """Remove a file (asks for permission).

    Args:
        path: The file to remove.
    """
    await asyncio.sleep(0)
    return f"removed {path}"


@tool
def ask_city() -> str:
    """Ask the user which city they mean."""
    raise SuspendCall(AwaitReason.USER_INPUT, {"question": "Which city do you mean?"})


def _turn(request: InferenceRequest) -> ScriptedTurn | str:
    last = request.messages[-1]
    if last.role == "tool":
        return f"Result: {last.text}. All done."
    text = (last.text or "").lower()
    if "markdown" in text:
        return HOSTILE
    if "remove" in text:
        return ScriptedTurn.call("remove_file", {"path": "/tmp/x.txt"})
    if "city" in text:
        return ScriptedTurn.call("ask_city", {}, text="Let me ask.")
    if "think" in text:
        return ScriptedTurn(reasoning="Pondering the question.", text="I thought about it.")
    if "hold" in text:
        return " ".join(f"held{i}" for i in range(30))
    return f"Hello! You said: {last.text}"


class HoldingExecutor(ScriptedExecutor):
    """A "hold" answer stalls mid-stream like a model that hangs."""

    async def stream(self, request: InferenceRequest) -> AsyncIterator[Any]:
        holding = "hold" in (request.messages[-1].text or "").lower()
        sent = 0
        async for item in super().stream(request):
            yield item
            sent += 1
            if holding and sent == HOLD_AFTER:
                await asyncio.sleep(30)


def setup(builder: AgentRuntimeBuilder) -> None:
    """Add the scripted provider and the tools."""
    executor = HoldingExecutor([_turn], repeat=True, chunk_size=6)
    executor.record_requests = False
    builder.with_provider("page-scripted", executor)
    builder.with_tool(remove_file)
    builder.with_tool(ask_city)
