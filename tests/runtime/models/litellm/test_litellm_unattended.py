"""Structured output, finish reasons, typed failures, retry advice, request controls and
fallbacks of ``LiteLLMExecutor`` against the local OpenAI server (no network)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_server import Reply, ToolCallSpec
from pydantic import BaseModel
from scenarios import MALFORMED

from awaken_runtime import (
    Error,
    InferenceParams,
    LiteLLMExecutor,
    NaturalEnd,
    OutputFailure,
    OutputSpec,
    ProviderFailure,
    RetryPolicy,
    RunFinish,
    RunState,
    StepEnd,
    Stopped,
)


class City(BaseModel):
    name: str
    population: int


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def _failure(state: RunState) -> ProviderFailure:
    assert isinstance(state.end_cause, Error), state.end_cause
    failure = state.end_cause.failure
    assert isinstance(failure, ProviderFailure)
    return failure


def _policy(**kw: Any) -> RetryPolicy:
    return RetryPolicy(**{"initial_delay_s": 0.25, "jitter": 0.0, **kw})


# -- structured output -------------------------------------------------------------------


async def test_native_response_format_is_sent_and_the_json_answer_validated(
    server: Any, build_runtime: Any
) -> None:
    server.add(Reply(text='{"name": "Oslo", "population": 700000}'))
    runtime = build_runtime(LiteLLMExecutor(), output=OutputSpec.of(City, mode="native"))
    state = await runtime.run("agent", "biggest city?")
    assert state.output_as(City) == City(name="Oslo", population=700000)
    body = server.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "final_result"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["name", "population"]
    assert "tools" not in body


async def test_tool_path_offers_the_final_result_tool_and_fixes_an_invalid_result(
    server: Any, build_runtime: Any
) -> None:
    server.add(
        Reply(tool_calls=[ToolCallSpec("c1", "final_result", '{"name": "Oslo"}')]),
        Reply(tool_calls=[ToolCallSpec("c2", "final_result", '{"name": "Oslo", "population": 7}')]),
    )
    runtime = build_runtime(LiteLLMExecutor(), output=OutputSpec.of(City, mode="tool"))
    state = await runtime.run("agent", "biggest city?")
    assert state.end_cause == NaturalEnd()
    assert state.output == {"name": "Oslo", "population": 7}
    first = server.requests[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["final_result"]
    assert first["tool_choice"] == "required"
    assert "response_format" not in first
    # The validation error went back as the call's result.
    sent = server.requests[1].body["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["tool_call_id"] == "c1"
    assert "'population' is a required property" in sent[-1]["content"]


async def test_tool_path_exhausting_retries_is_an_output_failure(
    server: Any, build_runtime: Any
) -> None:
    bad = Reply(tool_calls=[ToolCallSpec("c", "final_result", '{"name": 1}')])
    server.add(bad, Reply(tool_calls=[ToolCallSpec("d", "final_result", "{not json")]))
    spec = OutputSpec.of(City, mode="tool", retries=1)
    state = await build_runtime(LiteLLMExecutor(), output=spec).run("agent", "q")
    assert isinstance(state.end_cause, Error)
    assert isinstance(state.end_cause.failure, OutputFailure)
    assert state.end_cause.failure.attempts == 2
    assert "not valid JSON" in state.end_cause.failure.errors[0]
    assert len(server.requests) == 2


async def test_auto_uses_native_output_where_the_spec_says_the_model_takes_it(
    server: Any, build_runtime: Any, local_spec: Any
) -> None:
    server.add(Reply(text='{"name": "A", "population": 1}'), Reply(text="x"))
    spec = local_spec(native_output=True)
    await build_runtime(LiteLLMExecutor(), spec=spec, output=OutputSpec.of(City)).run("agent", "q")
    assert "response_format" in server.requests[0].body
    server.reset()
    result = '{"name": "A", "population": 1}'
    server.add(Reply(tool_calls=[ToolCallSpec("c", "final_result", result)]))
    spec = local_spec(native_output=False)
    await build_runtime(LiteLLMExecutor(), spec=spec, output=OutputSpec.of(City)).run("agent", "q")
    assert server.requests[0].body["tools"][0]["function"]["name"] == "final_result"


# -- finish reasons ----------------------------------------------------------------------


async def test_length_finish_reason_stops_as_truncated(server: Any, build_runtime: Any) -> None:
    server.add(Reply(text="The answer is", finish_reason="length"))
    events = [e async for e in build_runtime(LiteLLMExecutor()).stream("agent", "q")]
    finish = events[-1]
    assert isinstance(finish, RunFinish)
    assert isinstance(finish.end_cause, Stopped) and "truncated" in finish.end_cause.reason
    assert finish.finish_reason == "length"
    assert [e.finish_reason for e in events if isinstance(e, StepEnd)] == ["length"]


async def test_content_filter_is_a_typed_failure(server: Any, build_runtime: Any) -> None:
    server.add(Reply(text="", finish_reason="content_filter"))
    state = await build_runtime(LiteLLMExecutor()).run("agent", "q")
    failure = _failure(state)
    assert failure.error_class == "content_filter"
    assert failure.provider == "openai" and failure.model == "openai/local-model"


# -- typed failures ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "error_class", "status", "retryable", "attempts"),
    [
        (Reply.error(401, "bad key", type="invalid_request_error"), "auth", 401, False, 1),
        (Reply.error(404, "no such model", code="model_not_found"), "unknown_model", 404, False, 1),
        (
            Reply.error(429, "slow down", headers={"Retry-After": "0.01"}),
            "rate_limit",
            429,
            True,
            3,
        ),
        (Reply(drop=True), "connection", None, True, 3),
    ],
    ids=["401", "404", "429-exhausted", "disconnect"],
)
async def test_typed_failure_fields(
    server: Any,
    build_runtime: Any,
    reply: Reply,
    error_class: str,
    status: int | None,
    retryable: bool,
    attempts: int,
) -> None:
    server.add(*[reply] * 3)
    executor = LiteLLMExecutor(retry=_policy(max_retries=2), sleep=Sleeps())
    failure = _failure(await build_runtime(executor).run("agent", "q"))
    assert (failure.error_class, failure.status, failure.retryable, failure.attempts) == (
        error_class,
        status,
        retryable,
        attempts,
    )
    assert failure.provider == "openai" and failure.model == "openai/local-model"
    assert len(server.requests) == attempts
    if error_class == "rate_limit":
        assert failure.retry_after == pytest.approx(0.01)
    if error_class == "connection":
        assert "HTTP 500" not in failure.message


async def test_timeout_failure_fields(server: Any, build_runtime: Any, local_spec: Any) -> None:
    server.add(Reply.hang(5.0))
    spec = local_spec(timeout_s=0.3)
    executor = LiteLLMExecutor(retry=_policy(max_retries=0))
    failure = _failure(await build_runtime(executor, spec=spec).run("agent", "q"))
    assert (failure.error_class, failure.status, failure.retryable, failure.attempts) == (
        "timeout",
        None,
        True,
        1,
    )


# -- retry advice ------------------------------------------------------------------------


async def test_retry_after_is_honoured_on_503(server: Any, build_runtime: Any) -> None:
    sleeps = Sleeps()
    server.add(Reply.error(503, "overloaded", headers={"Retry-After": "2"}), Reply(text="ok"))
    state = await build_runtime(LiteLLMExecutor(retry=_policy(), sleep=sleeps)).run("agent", "q")
    assert state.final_text == "ok"
    assert sleeps.delays == [2.0]


async def test_retry_after_zero_falls_back_to_backoff(server: Any, build_runtime: Any) -> None:
    sleeps = Sleeps()
    server.add(Reply.error(429, "again", headers={"Retry-After": "0"}), Reply(text="ok"))
    state = await build_runtime(LiteLLMExecutor(retry=_policy(), sleep=sleeps)).run("agent", "q")
    assert state.final_text == "ok"
    assert sleeps.delays == [0.25]  # the policy's first backoff, not an immediate retry


async def test_too_long_retry_after_fails_at_once_naming_value_and_setting(
    server: Any, build_runtime: Any
) -> None:
    sleeps = Sleeps()
    server.add(Reply.error(503, "maintenance", headers={"Retry-After": "600"}))
    executor = LiteLLMExecutor(retry=_policy(max_retry_after_s=30), sleep=sleeps)
    failure = _failure(await build_runtime(executor).run("agent", "q"))
    assert sleeps.delays == [] and len(server.requests) == 1
    assert "retry after 600s" in failure.message
    assert "RetryPolicy.max_retry_after_s=30s" in failure.message
    assert failure.retry_after == 600.0 and failure.attempts == 1


# -- raw arguments and request controls ----------------------------------------------------


async def test_malformed_arguments_are_replayed_verbatim(server: Any, build_runtime: Any) -> None:
    server.add(*MALFORMED.replies())
    await build_runtime(LiteLLMExecutor(), tools=["get_weather"]).run("agent", MALFORMED.prompt)
    sent = server.requests[1].body["messages"]
    call = sent[-2]["tool_calls"][0]
    assert call["id"] == "call_bad"
    assert call["function"]["arguments"] == '{"city": "Par'  # not "{}"
    later = server.requests[2].body["messages"]
    assert [m["tool_calls"][0]["function"]["arguments"] for m in later if m.get("tool_calls")] == [
        '{"city": "Par',
        '["Paris"]',
    ]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("required", "required"),
        ("none", "none"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
async def test_tool_choice_and_parallel_tool_calls_reach_the_body(
    server: Any, build_runtime: Any, choice: str, sent: Any
) -> None:
    server.add(Reply(text="ok"))
    params = InferenceParams(tool_choice=choice, parallel_tool_calls=False)
    runtime = build_runtime(LiteLLMExecutor(), tools=["get_weather"], params=params)
    await runtime.run("agent", "q")
    body = server.requests[0].body
    assert body["tool_choice"] == sent
    assert body["parallel_tool_calls"] is False


async def test_response_format_param_reaches_the_body(server: Any, build_runtime: Any) -> None:
    server.add(Reply(text="{}"))
    params = InferenceParams(response_format={"type": "json_object"})
    await build_runtime(LiteLLMExecutor(), params=params).run("agent", "q")
    assert server.requests[0].body["response_format"] == {"type": "json_object"}
    assert "parallel_tool_calls" not in server.requests[0].body  # no tools: never sent


# -- fallbacks ---------------------------------------------------------------------------


async def test_fallback_after_exhausted_503s(
    server: Any, build_runtime: Any, local_spec: Any
) -> None:
    server.add(*[Reply.error(503, "down")] * 3, Reply(text="from the fallback"))
    spec = local_spec(fallbacks=("openai/backup-model",))
    executor = LiteLLMExecutor(retry=_policy(max_retries=2), sleep=Sleeps())
    events = [e async for e in build_runtime(executor, spec=spec).stream("agent", "q")]
    assert [r.body["model"] for r in server.requests] == ["local-model"] * 3 + ["backup-model"]
    assert events[-1].final_text == "from the fallback"
    assert [e.model for e in events if isinstance(e, StepEnd)] == ["openai/backup-model"]


async def test_no_fallback_for_a_class_not_marked(
    server: Any, build_runtime: Any, local_spec: Any
) -> None:
    server.add(Reply.error(401, "bad key"), Reply(text="never"))
    spec = local_spec(fallbacks=("openai/backup-model",))
    state = await build_runtime(LiteLLMExecutor(), spec=spec).run("agent", "q")
    assert _failure(state).error_class == "auth"
    assert len(server.requests) == 1


async def test_exhausted_fallbacks_count_every_attempt(
    server: Any, build_runtime: Any, local_spec: Any
) -> None:
    server.add(*[Reply.error(500, "boom")] * 4)
    spec = local_spec(fallbacks=("openai/backup-model",))
    executor = LiteLLMExecutor(retry=_policy(max_retries=1), sleep=Sleeps())
    failure = _failure(await build_runtime(executor, spec=spec).run("agent", "q"))
    assert failure.attempts == 4 and failure.model == "openai/backup-model"
    assert json.dumps([r.body["model"] for r in server.requests]).count("backup-model") == 2


async def test_no_fallback_after_output_was_streamed(
    server: Any, build_runtime: Any, local_spec: Any
) -> None:
    server.add(Reply(text="partial answer", stall_after=3, hang_s=5.0), Reply(text="never"))
    spec = local_spec(fallbacks=("openai/backup-model",), timeout_s=0.5)
    state = await build_runtime(LiteLLMExecutor(), spec=spec).run("agent", "q")
    assert _failure(state).error_class == "timeout"
    assert [r.body["model"] for r in server.requests] == ["local-model"]
