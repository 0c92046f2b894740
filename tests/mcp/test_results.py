"""Every kind of MCP content maps onto a ToolOutput the model can read."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from hypothesis import given
from hypothesis import strategies as st

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
    image, audio, text_resource, blob, link = out.parts
    assert out.content == ""  # no text before the first media block: no empty text
    assert image.type == "image_url"
    assert image.model_extra == {"image_url": {"url": "data:image/jpeg;base64,AAAA"}}
    assert audio.model_extra == {"input_audio": {"data": "BBBB", "format": "mp3"}}
    assert blob.type == "file"
    assert blob.model_extra == {
        "file": {"file_data": "data:application/pdf;base64,CCCC", "filename": "file:///b.bin"}
    }
    assert text_resource.type == "text" and text_resource.text == "[resource file:///a.txt]\nhello"
    assert link.type == "text" and link.text == "[resource link c: file:///c.md]"


_TEXT = st.builds(types.TextContent, text=st.text(max_size=8))
_IMAGE = st.builds(
    types.ImageContent, data=st.sampled_from(["AAAA", "iVBO"]), mimeType=st.just("image/png")
)
_AUDIO = st.builds(
    types.AudioContent,
    data=st.just("UklG"),
    mimeType=st.sampled_from(["audio/wav", "audio/mpeg", "audio/ogg"]),
)
_LINK = st.builds(types.ResourceLink, uri=st.just("file:///x.md"), name=st.just("x"))


@given(st.lists(st.one_of(_TEXT, _IMAGE, _AUDIO, _LINK), max_size=8))
def test_blocks_keep_their_order_and_no_text_is_empty(blocks: list[Any]) -> None:
    out = to_output(types.CallToolResult(content=blocks))
    media = [b for b in blocks if isinstance(b, types.ImageContent | types.AudioContent)]
    assert [p.type for p in out.parts if p.type != "text"] == [
        "image_url" if isinstance(b, types.ImageContent) else "input_audio" for b in media
    ]
    assert all(p.text for p in out.parts if p.type == "text"), "an empty text part"
    # Everything a model reads comes out in the server's order.
    said = [t for t in (_said(b) for b in blocks) if t]
    got = ([out.content] if out.content else []) if not out.parts else []
    if out.parts:
        lead = len(said) - len(out.parts)
        got = [out.content] if lead > 0 else []
        assert "\n\n".join(said[:lead]) == out.content
        got += [_said_part(p) for p in out.parts]
        said = ([out.content] if lead > 0 else []) + said[lead:]
    else:
        assert out.content == "\n\n".join(said)
        got, said = [out.content], ["\n\n".join(said)]
    assert got == said


def _said(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"image:{block.data}"
    if isinstance(block, types.AudioContent):
        return f"audio:{block.data}"
    return f"[resource link {block.name}: {block.uri}]"


def _said_part(part: Any) -> str:
    extra = part.model_extra or {}
    if part.type == "image_url":
        return "image:" + extra["image_url"]["url"].partition(",")[2]
    if part.type == "input_audio":
        return "audio:" + extra["input_audio"]["data"]
    return str(part.text)
