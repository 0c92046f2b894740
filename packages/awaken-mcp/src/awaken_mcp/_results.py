"""An MCP ``CallToolResult`` as a ``ToolOutput``.

Text blocks become the output's text, joined by blank lines. Images, audio
and embedded blob resources become ``ToolOutput.parts`` in OpenAI's part
shapes (``image_url`` with a data URL, ``input_audio``, ``file``); embedded
text resources and resource links are text, so every model can read them.
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


def _part(block: Any, texts: list[str]) -> ContentPart | None:
    if isinstance(block, types.TextContent):
        texts.append(block.text)
    elif isinstance(block, types.ImageContent):
        url = f"data:{block.mime_type};base64,{block.data}"
        return ContentPart(type="image_url", image_url={"url": url})
    elif isinstance(block, types.AudioContent):
        kind = block.mime_type.rpartition("/")[2] or "wav"
        return ContentPart(type="input_audio", input_audio={"data": block.data, "format": kind})
    elif isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            texts.append(f"[resource {res.uri}]\n{res.text}")
        else:
            mime = res.mime_type or "application/octet-stream"
            data = f"data:{mime};base64,{res.blob}"
            return ContentPart(type="file", file={"file_data": data, "filename": str(res.uri)})
    elif isinstance(block, types.ResourceLink):
        texts.append(f"[resource link {block.name}: {block.uri}]")
    else:  # a block type newer than this mapping: say so rather than drop it silently
        texts.append(f"[unsupported MCP content {getattr(block, 'type', type(block).__name__)}]")
    return None


def to_output(result: types.CallToolResult) -> ToolOutput:
    """Map one tool result; ``is_error`` results stay model-visible errors."""
    texts: list[str] = []
    parts = [p for p in (_part(b, texts) for b in result.content) if p is not None]
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    content = "\n\n".join(texts)
    if result.is_error and not content:
        content = "the MCP tool reported an error without a message"
    if parts:
        return ToolOutput(content=content, parts=parts, is_error=bool(result.is_error))
    return ToolOutput(content=content, is_error=bool(result.is_error))
