"""Stream assembly details: reasoning field names, interleaved and index-less fragments."""

from __future__ import annotations

from typing import Any

from openai_server import Reply, ToolCallSpec

from awaken_runtime import InferenceRequest, InferenceResponse, LiteLLMExecutor, Message
from awaken_runtime.models.litellm._stream import _Call, _finish_call, _merge_fragment


async def _items(spec: Any) -> list[Any]:
    request = InferenceRequest(model=spec, messages=[Message.user("hi")], tools=[])
    return [item async for item in LiteLLMExecutor().stream(request)]


async def test_reasoning_under_the_reasoning_field(server: Any, local_spec: Any) -> None:
    # vLLM/OpenRouter spell it "reasoning"; DeepSeek "reasoning_content".
    server.add(Reply(text="ok", reasoning="thinking it over", reasoning_field="reasoning"))
    items = await _items(local_spec())
    assert "".join(i.text for i in items[:-1] if i.channel == "reasoning") == "thinking it over"
    assert items[-1].reasoning == "thinking it over"


async def test_interleaved_parallel_call_fragments(server: Any, local_spec: Any) -> None:
    server.add(
        Reply(
            tool_calls=[
                ToolCallSpec("c1", "get_weather", '{"city": "Paris", "unit": "C"}'),
                ToolCallSpec("c2", "add", '{"a": 1, "b": 2}'),
            ],
            interleave=True,
            chunk_size=3,
        )
    )
    items = await _items(local_spec())
    response = items[-1]
    assert isinstance(response, InferenceResponse)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("c1", "get_weather", {"city": "Paris", "unit": "C"}),
        ("c2", "add", {"a": 1, "b": 2}),
    ]
    assert response.finish_reason == "tool_calls"


def test_fragments_without_index_or_with_repeated_id_and_name() -> None:
    calls: dict[int, _Call] = {}
    fragments: list[dict[str, Any]] = [
        {"id": "a", "function": {"name": "f", "arguments": '{"x"'}},
        {"function": {"arguments": ": 1}"}},
        {"id": "b", "function": {"name": "g", "arguments": "{}"}},
        {"index": None, "id": "b", "function": {"name": "g", "arguments": ""}},
    ]
    for fragment in fragments:
        _merge_fragment(calls, fragment)
    done = [_finish_call(calls[i]) for i in sorted(calls)]
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in done] == [
        ("a", "f", {"x": 1}, None),
        ("b", "g", {}, None),
    ]


def test_a_call_without_id_gets_one_and_bad_json_a_parse_error() -> None:
    calls: dict[int, _Call] = {}
    _merge_fragment(calls, {"index": 0, "function": {"name": "f", "arguments": "{oops"}})
    call = _finish_call(calls[0])
    assert call.id.startswith("call_")
    assert call.arguments == {}
    assert call.parse_error is not None and "not valid JSON" in call.parse_error
