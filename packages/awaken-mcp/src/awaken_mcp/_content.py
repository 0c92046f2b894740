"""A ``ToolOutput`` as MCP content: the server direction of the content round trip.

The inverse of ``_results.to_output`` (the client direction): the output's
text is a text block (only when there is text: no empty leading block), and
each of its parts, kept in OpenAI's shapes, becomes its MCP block:

- ``text`` -> ``TextContent``
- ``image_url`` with a base64 data URL -> ``ImageContent``; any other URL ->
  ``ResourceLink`` (MCP carries no remote image, only a link to it)
- ``input_audio`` ``{data, format}`` -> ``AudioContent`` (``audio/<format>``)
- ``file`` with ``file_data`` (a base64 data URL) -> an ``EmbeddedResource``
  holding the blob under ``filename`` (or ``file:///<file_id>``); a ``file``
  with only a ``file_id`` -> ``ResourceLink``

A part of a shape this mapping does not know is a text block saying so, never
silently dropped. An error output with no text at all still gets a message, so
a client always reads why the call failed.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from awaken_runtime import ContentPart, ToolOutput

__all__ = ["to_content", "to_result"]


def _data_url(url: str) -> tuple[str, str] | None:
    """``(mime, base64 data)`` of a ``data:<mime>;base64,<data>`` URL, else ``None``."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    mime, _, data = url[5:].partition(";base64,")
    return (mime or "application/octet-stream"), data


def _uri(name: str) -> str:
    # A bare file name is no URI: MCP resources need one (``file:///`` keeps the name readable).
    return name if "://" in name else f"file:///{name.lstrip('/')}"


def _block(part: ContentPart) -> types.ContentBlock:
    extra: dict[str, Any] = part.model_extra or {}
    if part.type == "text":
        return types.TextContent(text=part.text or "")
    if part.type == "image_url":
        url = str((extra.get("image_url") or {}).get("url", ""))
        decoded = _data_url(url)
        if decoded is not None:
            return types.ImageContent(data=decoded[1], mime_type=decoded[0])
        if url:
            return types.ResourceLink(name=url.rsplit("/", 1)[-1] or url, uri=url)
    elif part.type == "input_audio":
        audio = extra.get("input_audio") or {}
        if audio.get("data"):
            return types.AudioContent(
                data=str(audio["data"]), mime_type=f"audio/{audio.get('format') or 'wav'}"
            )
    elif part.type == "file":
        file = extra.get("file") or {}
        name = str(file.get("filename") or file.get("file_id") or "file")
        decoded = _data_url(str(file.get("file_data") or ""))
        if decoded is not None:
            blob = types.BlobResourceContents(uri=_uri(name), mime_type=decoded[0], blob=decoded[1])
            return types.EmbeddedResource(resource=blob)
        if file.get("file_id"):
            return types.ResourceLink(name=name, uri=_uri(str(file["file_id"])))
    if part.text is not None:
        return types.TextContent(text=part.text)
    return types.TextContent(text=f"[a {part.type!r} part this server cannot carry over MCP]")


def to_content(output: ToolOutput) -> list[types.ContentBlock]:
    """The MCP content blocks of ``output``: its text (if any), then each part."""
    blocks: list[types.ContentBlock] = []
    text = output.content
    if text or (output.is_error and not output.parts):
        blocks.append(types.TextContent(text=text or "the tool failed without a message"))
    blocks.extend(_block(p) for p in output.parts)
    return blocks


def to_result(output: ToolOutput) -> types.CallToolResult:
    """``output`` as a ``CallToolResult`` (``is_error`` kept)."""
    return types.CallToolResult(content=to_content(output), is_error=output.is_error)
