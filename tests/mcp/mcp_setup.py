"""``awaken mcp serve --setup mcp_setup:setup``: the tools the served agents list.

``gated_setup`` adds what the agents in ``gated/`` use: a tool their policy
denies, one that asks its user a question, one answering with audio and a file,
and a scripted model that calls the tool its prompt names.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator

from awaken_runtime import (
    AgentRuntimeBuilder,
    AwaitReason,
    ContentPart,
    InferenceRequest,
    InferenceResponse,
    SuspendCall,
    ToolCall,
    ToolOutput,
    tool,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: What to shout.
    """
    if text == "boom":
        raise RuntimeError("the tool broke")
    return text.upper() + "!"


def setup(builder: AgentRuntimeBuilder) -> None:
    """Register the tools."""
    builder.with_tool(add).with_tool(shout)


@tool
def wipe(path: str) -> str:
    """Delete a path (here: only say so).

    Args:
        path: What to delete.
    """
    return f"wiped {path}"


@tool
def erase(path: str) -> str:
    """Erase a path for good (here: only say so; the gated policy denies it outright).

    Args:
        path: What to erase.
    """
    return f"erased {path}"


@tool
def media() -> ToolOutput:
    """Answer with a WAV and a PDF file, to check that parts arrive intact."""
    return ToolOutput(
        content="two attachments",
        parts=[
            ContentPart(type="input_audio", input_audio={"data": WAV_B64, "format": "wav"}),
            ContentPart(
                type="file",
                file={
                    "filename": "report.pdf",
                    "file_data": f"data:application/pdf;base64,{PDF_B64}",
                },
            ),
        ],
    )


@tool
def ask_name() -> str:
    """Ask the user for their name (the answer is the call's result)."""
    raise SuspendCall(
        AwaitReason.USER_INPUT,
        {
            "message": "What is your name?",
            "requested_schema": {
                "type": "object",
                "properties": {"name": {"type": "string", "title": "Name"}},
                "required": ["name"],
            },
        },
    )


WAV_B64 = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(40))).decode()
PDF_B64 = base64.b64encode(b"%PDF-1.4\n" + bytes(range(256)) + b"\n%%EOF").decode()


class ToolThenAnswer:
    """A scripted model: the prompt's first word is the tool to call (the rest its
    ``text`` for ``shout``); once the result is in, it answers ``done: <result>``."""

    async def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        last = request.messages[-1]
        if last.role == "tool":
            yield InferenceResponse(text=f"done: {last.text}")
            return
        users = [m for m in request.messages if m.role == "user"]
        words = (users[-1].text if users else "").split(maxsplit=1)
        name = words[0] if words else "shout"
        args = {"text": words[1] if len(words) > 1 else "hi"} if name == "shout" else {}
        call = ToolCall(id=f"call_{uuid.uuid4().hex}", name=name, arguments=args)
        yield InferenceResponse(tool_calls=[call], finish_reason="tool_calls")


def gated_setup(builder: AgentRuntimeBuilder) -> None:
    """The tools and the scripted model of the agents in ``gated/``."""
    setup(builder)
    for each in (wipe, erase, media, ask_name):
        builder.with_tool(each)
    builder.with_provider("tool-then-answer", ToolThenAnswer())
