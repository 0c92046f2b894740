"""Messages and the OpenAI chat-format conversion pair."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from awaken_runtime import ContentPart, Message, ToolCall, from_openai, to_openai


def comparable(messages: list[Message]) -> list[dict[str, Any]]:
    """Everything the OpenAI format carries (ids and metadata are runtime-only)."""
    return [m.model_dump(exclude={"id", "metadata"}) for m in messages]


def test_round_trip_text_messages() -> None:
    msgs = [
        Message.system("Be nice."),
        Message.user("hi — ünïcode ✓"),
        Message.assistant("hello"),
    ]
    items = to_openai(msgs)
    assert items == [
        {"role": "system", "content": "Be nice."},
        {"role": "user", "content": "hi — ünïcode ✓"},
        {"role": "assistant", "content": "hello"},
    ]
    assert comparable(from_openai(items)) == comparable(msgs)


def test_round_trip_multi_part_content() -> None:
    parts = [
        {"type": "text", "text": "What is in "},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "this image?"},
    ]
    items = [{"role": "user", "content": parts}]
    msgs = from_openai(items)
    content = msgs[0].content
    assert isinstance(content, list)
    assert all(isinstance(p, ContentPart) for p in content)
    assert [p.type for p in content] == ["text", "image_url", "text"]
    assert to_openai(msgs) == items


def test_round_trip_tool_calls_with_json_string_arguments() -> None:
    calls = [
        ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="call_2", name="search", arguments={"q": "café", "opts": {"n": [1, 2]}}),
    ]
    msgs = [Message.assistant(None, tool_calls=calls)]
    items = to_openai(msgs)
    tool_calls = items[0]["tool_calls"]
    assert [c["id"] for c in tool_calls] == ["call_1", "call_2"]
    assert all(c["type"] == "function" for c in tool_calls)
    for raw, call in zip(tool_calls, calls, strict=True):
        assert raw["function"]["name"] == call.name
        # OpenAI sends arguments as a JSON *string*.
        assert isinstance(raw["function"]["arguments"], str)
        assert json.loads(raw["function"]["arguments"]) == call.arguments
    assert "café" in tool_calls[1]["function"]["arguments"]
    back = from_openai(items)
    assert back[0].tool_calls == calls
    assert comparable(back) == comparable(msgs)


def test_round_trip_tool_result_message() -> None:
    msgs = [Message.tool("call_1", "3", name="add")]
    items = to_openai(msgs)
    assert items == [{"role": "tool", "content": "3", "tool_call_id": "call_1", "name": "add"}]
    back = from_openai(items)
    assert back[0].role == "tool"
    assert back[0].tool_call_id == "call_1"
    assert comparable(back) == comparable(msgs)


def test_from_openai_then_to_openai_is_identity_on_a_conversation() -> None:
    items = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "add 1 and 2, and 3 and 4"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'},
                },
            ],
        },
        {"role": "tool", "content": "3", "tool_call_id": "c1"},
        {"role": "tool", "content": "7", "tool_call_id": "c2"},
        {"role": "assistant", "content": "3 and 7"},
    ]
    assert to_openai(from_openai(items)) == items


def test_from_openai_accepts_already_parsed_arguments() -> None:
    items = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}],
        }
    ]
    call = from_openai(items)[0].tool_calls[0]  # type: ignore[index]
    assert call.arguments == {"x": 1}
    assert call.parse_error is None


@pytest.mark.parametrize("raw", ["", None])
def test_from_openai_empty_arguments_mean_no_arguments(raw: str | None) -> None:
    items = [
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": raw}}],
        }
    ]
    call = from_openai(items)[0].tool_calls[0]  # type: ignore[index]
    assert call.arguments == {}
    assert call.parse_error is None


def test_malformed_argument_json_sets_parse_error_instead_of_raising() -> None:
    items = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "bad", "function": {"name": "add", "arguments": '{"a": 1, "b": '}},
                {"id": "ok", "function": {"name": "add", "arguments": '{"a": 1}'}},
            ],
        }
    ]
    calls = from_openai(items)[0].tool_calls
    assert calls is not None
    bad, ok = calls
    assert bad.id == "bad"
    assert bad.name == "add"
    assert bad.arguments == {}
    assert bad.parse_error is not None
    assert "not valid JSON" in bad.parse_error
    assert '{"a": 1, "b": ' in bad.parse_error  # shows the model what it sent
    assert ok.parse_error is None
    assert ok.arguments == {"a": 1}


@pytest.mark.parametrize(("raw", "kind"), [("[1, 2]", "list"), ('"x"', "str"), ("3", "int")])
def test_non_object_argument_json_sets_parse_error(raw: str, kind: str) -> None:
    items = [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": raw}}]}]
    call = from_openai(items)[0].tool_calls[0]  # type: ignore[index]
    assert call.arguments == {}
    assert call.parse_error is not None
    assert "JSON object" in call.parse_error
    assert kind in call.parse_error


def test_parse_error_of_huge_garbage_is_truncated() -> None:
    raw = "{" + "x" * 10_000
    items = [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": raw}}]}]
    call = from_openai(items)[0].tool_calls[0]  # type: ignore[index]
    assert call.parse_error is not None
    assert len(call.parse_error) < 500


def test_text_of_string_content() -> None:
    assert Message.user("hello").text == "hello"


def test_text_of_no_content_is_empty() -> None:
    assert Message.assistant(None, tool_calls=[ToolCall(id="c", name="f")]).text == ""


def test_text_of_parts_joins_text_parts_only() -> None:
    msg = Message(
        role="user",
        content=[
            ContentPart(type="text", text="a"),
            ContentPart.model_validate({"type": "image_url", "image_url": {"url": "u"}}),
            ContentPart(type="text", text="b"),
        ],
    )
    assert msg.text == "ab"


def test_messages_are_immutable_and_get_unique_ids() -> None:
    a, b = Message.user("x"), Message.user("x")
    assert a.id != b.id
    with pytest.raises(ValidationError):
        a.content = "y"  # type: ignore[misc]


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValidationError):
        Message(role="robot", content="x")  # type: ignore[arg-type]


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
json_objects = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=5,
    ),
    max_size=4,
)


@given(text=st.text(max_size=30), args=json_objects, call_id=st.text(min_size=1, max_size=8))
def test_property_round_trip(text: str, args: dict[str, Any], call_id: str) -> None:
    msgs = [
        Message.user(text),
        Message.assistant(
            text or None, tool_calls=[ToolCall(id=call_id, name="f", arguments=args)]
        ),
        Message.tool(call_id, text),
    ]
    assert comparable(from_openai(to_openai(msgs))) == comparable(msgs)
