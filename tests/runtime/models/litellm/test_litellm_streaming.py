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


def test_index_less_calls_that_all_carry_one_id_stay_separate_calls() -> None:
    calls: dict[int, _Call] = {}
    for amount in (1, 2, 3):
        fragment = {"id": "call_0", "function": {"name": "pay", "arguments": f'{{"a": {amount}}}'}}
        _merge_fragment(calls, fragment)
    done = [_finish_call(calls[i]) for i in sorted(calls)]
    assert [(c.id, c.arguments) for c in done] == [
        ("call_0", {"a": 1}),
        ("call_0", {"a": 2}),
        ("call_0", {"a": 3}),
    ]


def test_numeric_call_ids_become_strings() -> None:
    calls: dict[int, _Call] = {}
    _merge_fragment(calls, {"index": 0, "id": 7, "function": {"name": "f", "arguments": "{}"}})
    _merge_fragment(calls, {"id": 0, "function": {"name": "g", "arguments": "{}"}})
    done = [_finish_call(calls[i]) for i in sorted(calls)]
    assert [(c.id, c.name) for c in done] == [("7", "f"), ("0", "g")]


async def test_a_server_sending_one_id_for_every_call(server: Any, build_runtime: Any) -> None:
    """Through litellm: unique ids in the transcript, the server's ids in the next request."""
    server.add(
        Reply(
            tool_calls=[
                ToolCallSpec("call_0", "get_weather", '{"city": "Paris"}'),
                ToolCallSpec("call_0", "add", '{"a": 2, "b": 40}'),
                ToolCallSpec("call_0", "get_weather", '{"city": "Rome"}'),
            ]
        ),
        Reply(text="all done"),
    )
    runtime = build_runtime(LiteLLMExecutor(), tools=["get_weather", "add"])
    await runtime.run("agent", "go", thread_id="t-dup")
    messages = runtime.store.messages("t-dup")
    ids = [c.id for c in messages[1].tool_calls or []]
    assert len(set(ids)) == 3
    results = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
    assert [results[i] for i in ids] == ["sunny, 21C", "42", "rain, 17C"]
    sent = server.requests[1].body["messages"]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_0"] * 3
    assert [(m["tool_call_id"], m["content"]) for m in sent[3:6]] == [
        ("call_0", "sunny, 21C"),
        ("call_0", "42"),
        ("call_0", "rain, 17C"),
    ]
