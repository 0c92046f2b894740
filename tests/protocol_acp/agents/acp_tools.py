"""The tools of tests/protocol_acp/agents/assistant.toml (imported by path from the file)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from awaken_runtime import AwaitReason, SuspendCall, ToolCallContext, tool


@tool
def get_weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


@tool
def delete_file(path: str) -> str:
    """Delete a file (the permissions plugin asks first).

    Args:
        path: The file to delete.
    """
    os.remove(path)
    return f"deleted {path}"


@tool
async def wait(seconds: float) -> str:
    """Wait, so a test can cancel the run while a tool runs.

    Args:
        seconds: How long.
    """
    await asyncio.sleep(seconds)
    return "waited"


@tool
def noisy() -> str:
    """Print to stdout and stderr, the way careless tools and libraries do."""
    print("NOISE-FROM-A-TOOL")
    sys.stdout.write("MORE-NOISE\n")
    os.write(1, b"RAW-FD-NOISE\n")
    return "made noise"


@tool
def ask_user(question: str) -> str:
    """Ask the user a free-form question (a wait ACP has no request for).

    Args:
        question: The question.
    """
    raise SuspendCall(payload={"question": question})


@tool
def deploy(target: str, ctx: ToolCallContext) -> str:
    """Deploy by writing the target file; the tool itself asks for approval first.

    Args:
        target: The file the deployment writes.
    """
    if ctx.decision is None:
        raise SuspendCall(AwaitReason.TOOL_PERMISSION, {"reason": f"deploy writes {target}"})
    Path(target).write_text("deployed")
    return f"deployed to {target}"
