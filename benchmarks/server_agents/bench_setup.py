"""``--setup bench_setup:setup`` for benchmarks/server_load.py: scripted model and tools."""

from __future__ import annotations

import asyncio
import os

from awaken_runtime import (
    AgentRuntimeBuilder,
    InferenceRequest,
    ScriptedExecutor,
    ScriptedTurn,
    tool,
)

ANSWER = " ".join(f"token{i}" for i in range(40))
HOLD_S = float(os.environ.get("AWAKEN_BENCH_HOLD_S", "3"))


@tool
def lookup(q: str) -> str:
    """Look something up.

    Args:
        q: The query.
    """
    return f"found {q}"


@tool
async def hold() -> str:
    """Wait a while (keeps the run's stream open)."""
    await asyncio.sleep(HOLD_S)
    return "held"


def _turn(request: InferenceRequest) -> ScriptedTurn | str:
    if request.messages[-1].role == "tool":
        return ANSWER
    name = "hold" if "hold" in (request.messages[-1].text or "") else "lookup"
    return ScriptedTurn.call(name, {} if name == "hold" else {"q": "x"})


def setup(builder: AgentRuntimeBuilder) -> None:
    """Add the scripted provider and the tools."""
    executor = ScriptedExecutor([_turn], repeat=True, chunk_size=6)
    executor.record_requests = False
    builder.with_provider("scripted", executor)
    builder.with_tool(lookup)
    builder.with_tool(hold)
