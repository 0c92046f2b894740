"""``LiteLLMExecutor.deadline_s``: retries never stretch one call past its total deadline."""

from __future__ import annotations

import time
from typing import Any

import pytest
from openai_server import Reply
from scenarios import PLAIN

from awaken_runtime import (
    InferenceRequest,
    InferenceResponse,
    LiteLLMExecutor,
    Message,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RetryPolicy,
)
from awaken_runtime.models.litellm._executor import DEFAULT_DEADLINE_S


async def _stream(executor: LiteLLMExecutor, spec: Any) -> list[Any]:
    request = InferenceRequest(model=spec, messages=[Message.user("hi")], tools=[])
    return [item async for item in executor.stream(request)]


def test_the_default_deadline_is_documented_and_bounds_the_default_timeout() -> None:
    executor = LiteLLMExecutor()
    assert executor.deadline_s == DEFAULT_DEADLINE_S == 600.0
    assert executor.timeout_s <= executor.deadline_s


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_a_deadline_that_is_not_positive_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="deadline_s"):
        LiteLLMExecutor(deadline_s=bad)


async def test_a_silent_model_gives_up_at_the_deadline_not_after_every_retry(
    server: Any, local_spec: Any
) -> None:
    # Each attempt alone may wait 30 s and 5 retries follow: only the deadline ends it.
    server.add(*[Reply.hang(20) for _ in range(6)])
    policy = RetryPolicy(max_retries=5, initial_delay_s=0.01, jitter=0.0)
    executor = LiteLLMExecutor(retry=policy, deadline_s=0.5)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout) as info:
        await _stream(executor, local_spec(timeout_s=30.0))
    elapsed = time.monotonic() - started
    assert "LiteLLMExecutor.deadline_s=0.5s" in str(info.value)
    assert info.value.attempts == len(server.requests) >= 1
    assert elapsed < 10 * 0.5 + 5  # generous: far below one attempt's 30 s


async def test_backoff_that_would_pass_the_deadline_is_not_waited_out(
    server: Any, local_spec: Any
) -> None:
    server.add(*[Reply.error(503, "overloaded") for _ in range(11)])
    policy = RetryPolicy(max_retries=10, initial_delay_s=0.3, multiplier=1.0, jitter=0.0)
    executor = LiteLLMExecutor(retry=policy, deadline_s=0.7)
    await executor.warm_up()  # litellm's first-call imports are not the model's time
    with pytest.raises(ProviderError) as info:
        await _stream(executor, local_spec())
    # A 503 after a retry or two; on a loaded machine an attempt may be cut by the deadline.
    assert isinstance(info.value, (ProviderUnavailable, ProviderTimeout))
    assert "deadline" in str(info.value)
    assert 1 <= info.value.attempts < 11 and info.value.attempts == len(server.requests)


async def test_a_retry_within_the_deadline_still_answers(server: Any, local_spec: Any) -> None:
    server.add(Reply.error(503, "overloaded"), *PLAIN.replies())
    policy = RetryPolicy(max_retries=3, initial_delay_s=0.01, jitter=0.0)
    items = await _stream(LiteLLMExecutor(retry=policy, deadline_s=30.0), local_spec())
    assert isinstance(items[-1], InferenceResponse) and len(server.requests) == 2


async def test_output_already_streaming_is_bounded_per_chunk_not_by_the_deadline(
    server: Any, local_spec: Any
) -> None:
    # The deadline covers the wait for the first output; a slow but live stream goes on.
    server.add(Reply(text="Hello there, a slow answer", delay_s=0.1))
    executor = LiteLLMExecutor(deadline_s=0.5)
    await executor.warm_up()
    items = await _stream(executor, local_spec(timeout_s=5.0))
    assert isinstance(items[-1], InferenceResponse)
    assert items[-1].text == "Hello there, a slow answer"
