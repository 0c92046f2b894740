"""The tools of tests/protocol_acp/agents/assistant.toml (imported by path from the file)."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from awaken_runtime import (
    AwaitReason,
    CapabilityBound,
    Contributions,
    PluginManifest,
    Schedule,
    SuspendCall,
    ToolCallContext,
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


@tool
def later(seconds: float) -> str:
    """Run only after a delay (the ``Later`` gate schedules it).

    Args:
        seconds: How long the gate holds the call back.
    """
    return "ran later"


class Later:
    """A gate that schedules every ``later`` call ``seconds`` ahead (``Schedule``)."""

    manifest = PluginManifest(id="later", version="1.0.0", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: object) -> Contributions:
        def gate(ctx: object, call: Any) -> Schedule | None:
            if call.name != "later":
                return None
            return Schedule(at=datetime.now(UTC) + timedelta(seconds=call.arguments["seconds"]))

        return Contributions(tool_gates=[gate])
