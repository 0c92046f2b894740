"""The tools the MCP conformance suite's server scenarios call, as awaken tools.

``awaken mcp serve --setup everything:setup --agents agents/`` serves them
(``harness.py`` starts it). Each returns what its scenario expects, through
the same ``ToolOutput`` -> MCP mapping every awaken tool uses: text, then
``parts`` in OpenAI's shapes (an image data URL, ``input_audio``, a ``file``).
The elicitation scenarios' tools ask their user the awaken way, by parking
the call on a ``USER_INPUT`` ticket; the server turns it into
``elicitation/create`` (with ``--sessions`` or stdio) and the answer is the result.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import struct
import wave
import zlib
from typing import Any

from awaken_runtime import (
    AgentRuntimeBuilder,
    AwaitReason,
    ContentPart,
    SuspendCall,
    ToolCallContext,
    ToolDescriptor,
    ToolOutput,
    tool,
)


def _png() -> str:
    """A 1x1 red PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    raw = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + raw + chunk(b"IEND", b"")).decode()


def _wav() -> str:
    """Eight samples of 8 kHz mono silence, base64."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80" * 8)
    return base64.b64encode(buffer.getvalue()).decode()


PNG, WAV = _png(), _wav()
log = logging.getLogger("everything")


def _image() -> ContentPart:
    return ContentPart(type="image_url", image_url={"url": f"data:image/png;base64,{PNG}"})


def _file(name: str, mime: str, text: str) -> ContentPart:
    data = base64.b64encode(text.encode()).decode()
    return ContentPart(
        type="file", file={"filename": name, "file_data": f"data:{mime};base64,{data}"}
    )


@tool
def test_simple_text() -> str:
    """Answer with a fixed text."""
    return "This is a simple text response for testing."


@tool
def test_image_content() -> ToolOutput:
    """Answer with a 1x1 PNG."""
    return ToolOutput(parts=[_image()])


@tool
def test_audio_content() -> ToolOutput:
    """Answer with a short WAV."""
    return ToolOutput(
        parts=[ContentPart(type="input_audio", input_audio={"data": WAV, "format": "wav"})]
    )


@tool
def test_embedded_resource() -> ToolOutput:
    """Answer with an embedded text resource."""
    part = _file("test://embedded-resource", "text/plain", "This is an embedded resource content.")
    return ToolOutput(parts=[part])


@tool
def test_multiple_content_types() -> ToolOutput:
    """Answer with text, an image and an embedded resource."""
    resource = _file(
        "test://mixed-content-resource", "application/json", '{"test":"data","value":123}'
    )
    return ToolOutput(content="Multiple content types test:", parts=[_image(), resource])


@tool
async def test_tool_with_logging() -> str:
    """Log three records while running (served with --logging, they reach the client)."""
    for step in ("starting", "halfway", "done"):
        log.info("test_tool_with_logging: %s", step)
        await asyncio.sleep(0.05)
    return "logged three records"


@tool
def test_error_handling() -> str:
    """Always fail."""
    raise RuntimeError("This tool intentionally returns an error for testing")


def _ask(message: str, properties: dict[str, Any], required: list[str] | None = None) -> None:
    """Park the call on a question (USER_INPUT): awaken mcp serve asks the client with it."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    raise SuspendCall(AwaitReason.USER_INPUT, {"message": message, "requested_schema": schema})


@tool
def test_elicitation(message: str) -> str:
    """Ask the user for a name and an email; the answer is the result.

    Args:
        message: What to show the user.
    """
    _ask(
        message,
        {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        ["username", "email"],
    )
    return "unreachable"


@tool
def test_elicitation_sep1034_defaults() -> str:
    """Ask with a default for every primitive type."""
    _ask(
        "Confirm or change the defaults",
        {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "default": True},
        },
    )
    return "unreachable"


@tool
def test_elicitation_sep1330_enums() -> str:
    """Ask with the five enum shapes (untitled, titled, legacy, multi, titled multi)."""
    titled = [{"const": f"value{i}", "title": f"Option {i}"} for i in (1, 2, 3)]
    choices = [{"const": f"value{i}", "title": f"Choice {i}"} for i in (1, 2, 3)]
    options = ["option1", "option2", "option3"]
    _ask(
        "Pick options",
        {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {"type": "array", "items": {"anyOf": choices}},
        },
    )
    return "unreachable"


class SchemaTool:
    """A tool whose input schema uses JSON Schema 2020-12 keywords, served as written."""

    descriptor = ToolDescriptor(
        id="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        parameters={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    )

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
        """Echo the arguments."""
        return ToolOutput.ok(f"received {sorted(args)}")


TOOLS: list[Any] = [
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_error_handling,
    test_tool_with_logging,
    test_elicitation,
    test_elicitation_sep1034_defaults,
    test_elicitation_sep1330_enums,
    SchemaTool(),
]


def setup(builder: AgentRuntimeBuilder) -> None:
    """Register the scenario tools."""
    for each in TOOLS:
        builder.with_tool(each)
