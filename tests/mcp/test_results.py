"""Every kind of MCP content maps onto a ToolOutput the model can read."""

from __future__ import annotations

import json

import mcp_types as types

from awaken_mcp import to_output


def test_text_blocks_join_and_structured_content_fills_in_for_missing_text() -> None:
    out = to_output(
        types.CallToolResult(
            content=[types.TextContent(text="a"), types.TextContent(text="b")],
            structured_content={"ignored": True},
        )
    )
    assert out.content == "a\n\nb" and not out.is_error and out.parts == []
    only = to_output(types.CallToolResult(content=[], structured_content={"n": 1, "é": "ü"}))
    assert json.loads(only.content) == {"n": 1, "é": "ü"}


def test_is_error_is_a_model_visible_error_even_without_text() -> None:
    out = to_output(types.CallToolResult(content=[], is_error=True))
    assert out.is_error and "without a message" in out.content


def test_images_audio_and_resources() -> None:
    out = to_output(
        types.CallToolResult(
            content=[
                types.ImageContent(data="AAAA", mime_type="image/jpeg"),
                types.AudioContent(data="BBBB", mime_type="audio/mpeg"),
                types.EmbeddedResource(
                    resource=types.TextResourceContents(uri="file:///a.txt", text="hello")
                ),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri="file:///b.bin", blob="CCCC", mime_type="application/pdf"
                    )
                ),
                types.ResourceLink(uri="file:///c.md", name="c"),
            ]
        )
    )
    image, audio, blob = out.parts
    assert image.type == "image_url"
    assert image.model_extra == {"image_url": {"url": "data:image/jpeg;base64,AAAA"}}
    assert audio.model_extra == {"input_audio": {"data": "BBBB", "format": "mpeg"}}
    assert blob.type == "file"
    assert blob.model_extra == {
        "file": {"file_data": "data:application/pdf;base64,CCCC", "filename": "file:///b.bin"}
    }
    assert "[resource file:///a.txt]\nhello" in out.content
    assert "[resource link c: file:///c.md]" in out.content
