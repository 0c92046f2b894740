"""``ToolOutput`` -> MCP content (the server direction) and back through ``to_output``."""

from __future__ import annotations

import base64

import mcp_types as types
from hypothesis import given
from hypothesis import strategies as st

from awaken_mcp import to_output
from awaken_mcp._content import to_content, to_result
from awaken_runtime import ContentPart, ToolOutput

_B64 = st.binary(min_size=0, max_size=64).map(lambda b: base64.b64encode(b).decode())
_MIME = st.sampled_from(["image/png", "image/jpeg", "application/pdf", "text/plain"])


def image(data: str, mime: str = "image/png") -> ContentPart:
    return ContentPart(type="image_url", image_url={"url": f"data:{mime};base64,{data}"})


def audio(data: str, kind: str = "wav") -> ContentPart:
    return ContentPart(type="input_audio", input_audio={"data": data, "format": kind})


def file(data: str, mime: str, name: str) -> ContentPart:
    return ContentPart(
        type="file", file={"filename": name, "file_data": f"data:{mime};base64,{data}"}
    )


def test_no_empty_leading_text_block() -> None:
    blocks = to_content(ToolOutput(parts=[image("AAAA")]))
    assert [b.type for b in blocks] == ["image"]
    assert to_content(ToolOutput.ok("")) == []
    assert [b.type for b in to_content(ToolOutput.ok("hi"))] == ["text"]


def test_an_error_without_text_still_says_it_failed() -> None:
    result = to_result(ToolOutput(content="", is_error=True))
    assert result.is_error
    assert isinstance(result.content[0], types.TextContent) and result.content[0].text


def test_each_part_shape_maps_to_its_block() -> None:
    out = ToolOutput(
        content="head",
        parts=[
            ContentPart(type="text", text="more"),
            image("iVBO"),
            ContentPart(type="image_url", image_url={"url": "https://example.test/a.png"}),
            audio("UklG", "mp3"),
            file("JVBE", "application/pdf", "report.pdf"),
            ContentPart(type="file", file={"file_id": "file-123"}),
            ContentPart(type="video_url", video_url={"url": "x"}),
        ],
    )
    blocks = to_content(out)
    assert [b.type for b in blocks] == [
        "text", "text", "image", "resource_link", "audio", "resource", "resource_link", "text",
    ]  # fmt: skip
    assert blocks[2].data == "iVBO" and blocks[2].mime_type == "image/png"
    assert blocks[3].uri == "https://example.test/a.png"
    assert blocks[4].data == "UklG" and blocks[4].mime_type == "audio/mp3"
    resource = blocks[5].resource
    assert isinstance(resource, types.BlobResourceContents)
    assert resource.blob == "JVBE" and resource.mime_type == "application/pdf"
    assert resource.uri == "file:///report.pdf"
    assert "video_url" in blocks[7].text  # said, not silently dropped


@given(
    text=st.text(max_size=20),
    images=st.lists(st.tuples(_B64, _MIME), max_size=3),
    audios=st.lists(_B64.filter(bool), max_size=3),
    files=st.lists(st.tuples(_B64, _MIME), max_size=3),
)
def test_round_trip_keeps_every_part_intact(
    text: str, images: list[tuple[str, str]], audios: list[str], files: list[tuple[str, str]]
) -> None:
    parts = [image(d, m) for d, m in images] + [audio(d) for d in audios]
    parts += [file(d, m, f"f{i}.bin") for i, (d, m) in enumerate(files)]
    back = to_output(to_result(ToolOutput(content=text, parts=parts)))
    assert back.content == text
    assert not back.is_error
    assert len(back.parts) == len(parts)
    for sent, got in zip(parts, back.parts, strict=True):
        assert got.type == sent.type
        sent_extra, got_extra = sent.model_extra or {}, got.model_extra or {}
        if sent.type == "image_url":
            assert got_extra["image_url"]["url"] == sent_extra["image_url"]["url"]
        elif sent.type == "input_audio":
            assert got_extra["input_audio"] == sent_extra["input_audio"]
        else:
            assert got_extra["file"]["file_data"] == sent_extra["file"]["file_data"]
