"""Real agents through litellm against the local OpenAI-compatible server.

Each shared scenario runs twice: through ``ScriptedExecutor`` and through
``LiteLLMExecutor`` + the server streaming the same turns over SSE. Both runs
must produce the same events (modulo run/thread ids), the same transcript, the
same usage and the same cost.
"""

from __future__ import annotations

from typing import Any

import pytest
from scenarios import (
    ALL,
    CHUNK,
    MALFORMED,
    MULTI_STEP,
    PARALLEL,
    PLAIN,
    PRICING,
    REASONING,
    Scenario,
)

from awaken_runtime import (
    LiteLLMExecutor,
    Message,
    NaturalEnd,
    RunFinish,
    ScriptedExecutor,
    StepEnd,
    TextDelta,
    TokenUsage,
    ToolCallDone,
    ToolCallReady,
)


async def _run(runtime: Any, scenario: Scenario) -> tuple[list[Any], list[Message]]:
    events = [e async for e in runtime.stream("agent", scenario.prompt, thread_id="t1")]
    return events, runtime.store.messages("t1")


def _neutral(events: list[Any]) -> list[dict[str, Any]]:
    out = []
    for event in events:
        data = event.model_dump(mode="json", exclude={"run_id", "thread_id"})
        out.append(data)
    return out


def _transcript(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", exclude={"id"}) for m in messages]


def _cost(usage: TokenUsage) -> float:
    cached = usage.cached_tokens
    return (
        (usage.prompt_tokens - cached) * PRICING.input_per_mtok
        + cached * (PRICING.cached_input_per_mtok or 0)
        + usage.completion_tokens * PRICING.output_per_mtok
    ) / 1e6


@pytest.mark.parametrize("scenario", ALL, ids=lambda s: s.name)
async def test_same_scenario_same_transcript_scripted_and_litellm(
    scenario: Scenario, server: Any, build_runtime: Any
) -> None:
    scripted = build_runtime(
        ScriptedExecutor(scenario.scripted_turns(), chunk_size=CHUNK),
        tools=scenario.tools,
        provider="scripted",
    )
    server.add(*scenario.replies())
    real = build_runtime(LiteLLMExecutor(), tools=scenario.tools)

    s_events, s_messages = await _run(scripted, scenario)
    r_events, r_messages = await _run(real, scenario)

    assert server.pending == 0
    assert len(server.requests) == len(scenario.turns)
    assert _transcript(r_messages) == _transcript(s_messages)
    assert _neutral(r_events) == _neutral(s_events)

    finish = r_events[-1]
    assert isinstance(finish, RunFinish)
    assert finish.end_cause == NaturalEnd()
    assert finish.final_text == scenario.final_text
    assert finish.usage == scenario.usage
    assert finish.cost == pytest.approx(_cost(scenario.usage))
    step_usage = [e.usage for e in r_events if isinstance(e, StepEnd)]
    assert step_usage == [t.usage for t in scenario.turns]


async def test_plain_answer_streams_text_deltas(server: Any, build_runtime: Any) -> None:
    server.add(*PLAIN.replies())
    events, messages = await _run(build_runtime(LiteLLMExecutor()), PLAIN)
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1  # streamed in pieces, not one blob
    assert "".join(deltas) == PLAIN.final_text
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].text == PLAIN.final_text
    # What the server saw: the OpenAI request litellm sent.
    body = server.requests[0].body
    assert body["model"] == "local-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are a test agent."},
        {"role": "user", "content": PLAIN.prompt},
    ]
    assert "tools" not in body


async def test_multi_step_tool_calling_sends_results_back(server: Any, build_runtime: Any) -> None:
    server.add(*MULTI_STEP.replies())
    events, messages = await _run(
        build_runtime(LiteLLMExecutor(), tools=["get_weather"]), MULTI_STEP
    )
    ready = [(e.call_id, e.name, e.arguments) for e in events if isinstance(e, ToolCallReady)]
    assert ready == [
        ("call_paris", "get_weather", {"city": "Paris"}),
        ("call_rome", "get_weather", {"city": "Rome"}),
    ]
    done = [(e.call_id, e.output, e.outcome) for e in events if isinstance(e, ToolCallDone)]
    assert done == [("call_paris", "sunny, 21C", "success"), ("call_rome", "rain, 17C", "success")]
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    tools = server.requests[0].body["tools"]
    assert tools[0]["type"] == "function"
    assert tools[0]["function"]["name"] == "get_weather"
    assert tools[0]["function"]["parameters"]["properties"]["city"]["type"] == "string"
    # The third request carries the whole exchange in OpenAI's shape.
    sent = server.requests[2].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["id"] == "call_paris"
    assert sent[2]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }
    assert sent[3] == {
        "role": "tool",
        "content": "sunny, 21C",
        "tool_call_id": "call_paris",
        "name": "get_weather",
    }


async def test_parallel_tool_calls_in_one_response(server: Any, build_runtime: Any) -> None:
    server.add(*PARALLEL.replies())
    events, messages = await _run(
        build_runtime(LiteLLMExecutor(), tools=["get_weather", "add"]), PARALLEL
    )
    assistant = messages[1]
    assert [(c.id, c.name, c.arguments) for c in assistant.tool_calls or []] == [
        ("call_w", "get_weather", {"city": "Paris"}),
        ("call_a", "add", {"a": 2, "b": 40}),
        ("call_r", "get_weather", {"city": "Rome"}),
    ]
    results = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
    assert results == {"call_w": "sunny, 21C", "call_a": "42", "call_r": "rain, 17C"}
    assert events[-1].final_text == PARALLEL.final_text


async def test_streamed_reasoning_becomes_reasoning_deltas(server: Any, build_runtime: Any) -> None:
    server.add(*REASONING.replies())
    events, messages = await _run(build_runtime(LiteLLMExecutor()), REASONING)
    channels = [(e.channel, e.delta) for e in events if isinstance(e, TextDelta)]
    reasoning = "".join(d for c, d in channels if c == "reasoning")
    text = "".join(d for c, d in channels if c == "text")
    assert reasoning == REASONING.turns[0].reasoning
    assert text == REASONING.final_text
    # Reasoning streams before the answer.
    assert channels[0][0] == "reasoning" and channels[-1][0] == "text"
    assert messages[-1].metadata == {
        "reasoning": REASONING.turns[0].reasoning,
        "finish_reason": "stop",
    }
    assert events[-1].usage.reasoning_tokens == 18


async def test_malformed_tool_json_is_a_model_visible_error(
    server: Any, build_runtime: Any
) -> None:
    server.add(*MALFORMED.replies())
    events, messages = await _run(
        build_runtime(LiteLLMExecutor(), tools=["get_weather"]), MALFORMED
    )
    done = {e.call_id: (e.outcome, e.output) for e in events if isinstance(e, ToolCallDone)}
    assert done["call_bad"][0] == "error"
    assert "Invalid arguments for tool 'get_weather'" in done["call_bad"][1]
    assert "not valid JSON" in done["call_bad"][1]
    assert done["call_list"][0] == "error"
    assert "must be a JSON object" in done["call_list"][1]
    assert done["call_good"] == ("success", "sunny, 21C")
    # The model saw the errors (they are in the next request) and the run went on.
    sent = server.requests[1].body["messages"]
    assert sent[-1]["tool_call_id"] == "call_bad"
    assert "not valid JSON" in sent[-1]["content"]
    assert events[-1].end_cause == NaturalEnd()
    assert [m.metadata.get("is_error") for m in messages if m.role == "tool"] == [
        True,
        True,
        None,
    ]
