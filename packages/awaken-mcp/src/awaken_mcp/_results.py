"""An MCP ``CallToolResult`` as a ``ToolOutput``: the client direction of the content round trip.

The inverse of ``_content`` (the server direction). Text blocks before the
first non-text block are the output's text, joined by blank lines; from the
first non-text block on, every block is a ``ToolOutput.parts`` entry in the
server's order (a text block there is a ``text`` part), in OpenAI's part
shapes:

- ``ImageContent`` -> ``image_url`` with a ``data:<mime>;base64,`` URL
- ``AudioContent`` -> ``input_audio`` ``{data, format}`` (``audio/mpeg`` is
  ``mp3``, ``audio/wav``/``x-wav``/``wave`` are ``wav``, else the subtype)
- ``EmbeddedResource`` with a blob -> ``file`` ``{file_data: <data URL with
  its mime>, filename: <its uri>}``; with text -> a ``text`` part
  ``[resource <uri>]`` and the text (every model reads it)
- ``ResourceLink`` -> a ``text`` part ``[resource link <name>: <uri>]``

A result of text only stays plain text. No part is an empty text block.
Structured content is the text when the server sent no text block (servers
should send both; the text then wins, as the spec says it is the same data).
``isError`` is a model-visible error: the run continues and the model reads why.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from awaken_runtime import ContentPart, ToolOutput

__all__ = ["to_output"]

_AUDIO = {"mpeg": "mp3", "mp3": "mp3", "wav": "wav", "x-wav": "wav", "wave": "wav"}


def _text(block: Any) -> str | None:
    """The text a block reads as, or None for a block that is a media part."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.TextResourceContents
    ):
        return f"[resource {block.resource.uri}]\n{block.resource.text}"
    if isinstance(block, types.ResourceLink):
        return f"[resource link {block.name}: {block.uri}]"
    if isinstance(block, types.ImageContent | types.AudioContent | types.EmbeddedResource):
        return None
    # A block type newer than this mapping: say so rather than drop it silently.
    return f"[unsupported MCP content {getattr(block, 'type', type(block).__name__)}]"


def _media(block: Any) -> ContentPart:
    if isinstance(block, types.ImageContent):
        url = f"data:{block.mime_type};base64,{block.data}"
        return ContentPart(type="image_url", image_url={"url": url})
    if isinstance(block, types.AudioContent):
        sub = block.mime_type.rpartition("/")[2].lower()
        kind = _AUDIO.get(sub, sub or "wav")
        return ContentPart(type="input_audio", input_audio={"data": block.data, "format": kind})
    res = block.resource  # an embedded blob
    mime = res.mime_type or "application/octet-stream"
    data = f"data:{mime};base64,{res.blob}"
    return ContentPart(type="file", file={"file_data": data, "filename": str(res.uri)})


def to_output(result: types.CallToolResult) -> ToolOutput:
    """Map one tool result; ``is_error`` results stay model-visible errors."""
    texts: list[str] = []
    parts: list[ContentPart] = []
    for block in result.content:
        text = _text(block)
        if text is None:
            parts.append(_media(block))
        elif not parts:
            texts.append(text)
        elif text:
            parts.append(ContentPart(type="text", text=text))
    if not texts and not parts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    content = "\n\n".join(t for t in texts if t)
    if result.is_error and not content:
        content = "the MCP tool reported an error without a message"
    if parts:
        return ToolOutput(content=content, parts=parts, is_error=bool(result.is_error))
    return ToolOutput(content=content, is_error=bool(result.is_error))
