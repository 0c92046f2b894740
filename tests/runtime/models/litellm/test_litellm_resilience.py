"""Retries, timeouts and provider errors of ``LiteLLMExecutor`` (local server, no network)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from openai_server import Reply
from scenarios import PLAIN

from awaken_runtime import (
    Error,
    InferenceRequest,
    LiteLLMExecutor,
    Message,
    NaturalEnd,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderConnectionError,
    ProviderContextLength,
    ProviderError,
    ProviderFailure,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    RetryPolicy,
    RunFinish,
    TextDelta,
    UnknownModelError,
)
from awaken_runtime.models.litellm._errors import classify, retry_after_seconds
from awaken_runtime.models.litellm._executor import import_litellm


class Sleeps:
    """Records backoff delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


async def _finish(runtime: Any, prompt: str = "hi") -> tuple[RunFinish, list[Any]]:
    events = [e async for e in runtime.stream("agent", prompt, thread_id="t")]
    finish = events[-1]
    assert isinstance(finish, RunFinish)
    return finish, events


def _failure(finish: RunFinish) -> ProviderFailure:
    assert isinstance(finish.end_cause, Error), finish.end_cause
    failure = finish.end_cause.failure
    assert isinstance(failure, ProviderFailure)
    return failure


async def _stream(executor: LiteLLMExecutor, spec: Any) -> list[Any]:
    request = InferenceRequest(model=spec, messages=[Message.user("hi")], tools=[])
    return [item async for item in executor.stream(request)]


# -- retried: 429, 5xx, timeouts ---------------------------------------------------------


async def test_429_honours_retry_after_then_succeeds(server: Any, build_runtime: Any) -> None:
    sleeps = Sleeps()
    server.add(
        Reply.error(429, "Rate limit reached", type="requests", headers={"Retry-After": "7"}),
        *PLAIN.replies(),
    )
    finish, events = await _finish(build_runtime(LiteLLMExecutor(sleep=sleeps)))
    assert finish.end_cause == NaturalEnd()
    assert finish.final_text == PLAIN.final_text
    assert sleeps.delays == [7.0]  # the provider's wait, not the (ms) backoff
    assert len(server.requests) == 2
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == PLAIN.final_text


async def test_429_retry_after_ms_really_waits(server: Any, build_runtime: Any) -> None:
    server.add(Reply.error(429, "slow down", headers={"retry-after-ms": "150"}), *PLAIN.replies())
    started = time.perf_counter()
    finish, _ = await _finish(build_runtime(LiteLLMExecutor()))
    assert finish.end_cause == NaturalEnd()
    assert time.perf_counter() - started >= 0.15


async def test_429_retry_after_too_long_fails_instead_of_waiting(
    server: Any, build_runtime: Any
) -> None:
    sleeps = Sleeps()
    server.add(Reply.error(429, "quota exceeded", headers={"Retry-After": "3600"}))
    executor = LiteLLMExecutor(retry=RetryPolicy(max_retry_after_s=60), sleep=sleeps)
    finish, _ = await _finish(build_runtime(executor))
    failure = _failure(finish)
    assert sleeps.delays == []
    assert len(server.requests) == 1
    assert "ProviderRateLimited" in failure.message
    assert "rate limited (HTTP 429)" in failure.message
    assert "quota exceeded" in failure.message


async def test_500_twice_then_success_with_exponential_backoff(
    server: Any, build_runtime: Any
) -> None:
    sleeps = Sleeps()
    server.add(Reply.error(500, "boom"), Reply.error(503, "overloaded"), *PLAIN.replies())
    retry = RetryPolicy(initial_delay_s=0.25, multiplier=2, jitter=0)
    finish, events = await _finish(build_runtime(LiteLLMExecutor(retry=retry, sleep=sleeps)))
    assert finish.end_cause == NaturalEnd()
    assert sleeps.delays == [0.25, 0.5]
    assert len(server.requests) == 3
    assert finish.usage == PLAIN.usage  # failed attempts cost nothing
    # Nothing leaked from the failed attempts into the stream.
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == PLAIN.final_text


async def test_5xx_retries_exhausted_fail_naming_attempts(
    server: Any, build_runtime: Any, fast_retry: RetryPolicy
) -> None:
    server.add(*[Reply.error(502, "bad gateway")] * 4)
    finish, _ = await _finish(build_runtime(LiteLLMExecutor(retry=fast_retry)))
    failure = _failure(finish)
    assert len(server.requests) == 4
    assert failure.provider == "openai"  # the upstream, not the executor
    assert failure.model == "openai/local-model"
    assert "ProviderUnavailable" in failure.message
    assert "gave up after 4 attempts" in failure.message


async def test_hanging_response_hits_the_timeout(
    server: Any, build_runtime: Any, local_spec: Any
) -> None:
    server.add(Reply.hang(10))
    spec = local_spec(timeout_s=0.3)
    started = time.perf_counter()
    finish, _ = await _finish(
        build_runtime(LiteLLMExecutor(retry=RetryPolicy(max_retries=0)), spec=spec)
    )
    elapsed = time.perf_counter() - started
    failure = _failure(finish)
    assert 0.25 < elapsed < 3
    assert "ProviderTimeout" in failure.message
    assert "did not respond within 0.3s" in failure.message
    assert "timeout_s" in failure.message


async def test_timeout_is_retried(
    server: Any, build_runtime: Any, local_spec: Any, fast_retry: RetryPolicy
) -> None:
    server.add(Reply.hang(10), *PLAIN.replies())
    finish, _ = await _finish(
        build_runtime(LiteLLMExecutor(retry=fast_retry), spec=local_spec(timeout_s=0.3))
    )
    assert finish.end_cause == NaturalEnd()
    assert len(server.requests) == 2


async def test_stall_mid_stream_times_out_without_retry(
    server: Any, build_runtime: Any, local_spec: Any, fast_retry: RetryPolicy
) -> None:
    # Output already reached the caller: a retry would stream it twice.
    server.add(Reply(text="Hello there, partial answer", stall_after=3, hang_s=10))
    finish, events = await _finish(
        build_runtime(LiteLLMExecutor(retry=fast_retry), spec=local_spec(timeout_s=0.3))
    )
    failure = _failure(finish)
    assert "ProviderTimeout" in failure.message
    assert len(server.requests) == 1
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["Hell", "o th"]


# -- not retried: auth, bad request, unknown model ---------------------------------------


async def test_401_fails_fast_naming_the_key_variable(
    server: Any, build_runtime: Any, fast_retry: RetryPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.add(
        Reply.error(
            401, "Incorrect API key provided", type="invalid_request_error", code="invalid_api_key"
        ),
        *PLAIN.replies(),
    )
    sleeps = Sleeps()
    finish, _ = await _finish(build_runtime(LiteLLMExecutor(retry=fast_retry, sleep=sleeps)))
    failure = _failure(finish)
    assert len(server.requests) == 1 and sleeps.delays == []
    assert failure.provider == "openai"  # the upstream, not the executor
    assert failure.model == "openai/local-model"
    assert failure.message.startswith("ProviderAuthError: openai model 'openai/local-model'")
    assert "Incorrect API key provided" in failure.message
    assert "OPENAI_API_KEY" in failure.message
    assert server.base_url in failure.message


async def test_a_set_but_wrong_conventional_key_is_named_on_401(
    server: Any, build_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    server.add(Reply.error(401, "Incorrect API key provided"))
    finish, _ = await _finish(build_runtime(LiteLLMExecutor()))
    assert server.requests[0].headers["authorization"] == "Bearer sk-wrong"
    failure = _failure(finish)
    assert "set the environment variable OPENAI_API_KEY to a valid API key" in failure.message


async def test_api_key_env_is_sent_and_named_on_401(
    server: Any, build_runtime: Any, local_spec: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWAKEN_TEST_KEY", "sk-secret-123")
    server.add(Reply.error(403, "forbidden"))
    spec = local_spec(api_key_env="AWAKEN_TEST_KEY")
    finish, _ = await _finish(build_runtime(LiteLLMExecutor(), spec=spec))
    assert server.requests[0].headers["authorization"] == "Bearer sk-secret-123"
    failure = _failure(finish)
    assert "(HTTP 403)" in failure.message
    assert "set the environment variable AWAKEN_TEST_KEY" in failure.message
    assert "sk-secret-123" not in failure.message


async def test_missing_api_key_env_fails_before_any_request(
    server: Any, build_runtime: Any, local_spec: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWAKEN_TEST_KEY", raising=False)
    finish, _ = await _finish(
        build_runtime(LiteLLMExecutor(), spec=local_spec(api_key_env="AWAKEN_TEST_KEY"))
    )
    failure = _failure(finish)
    assert server.requests == []
    assert "AWAKEN_TEST_KEY" in failure.message
    assert "is not set" in failure.message


async def test_unknown_model_404_is_not_retried(
    server: Any, build_runtime: Any, fast_retry: RetryPolicy
) -> None:
    server.add(
        Reply.error(
            404,
            "The model `local-model` does not exist",
            type="invalid_request_error",
            code="model_not_found",
        )
    )
    finish, _ = await _finish(build_runtime(LiteLLMExecutor(retry=fast_retry)))
    failure = _failure(finish)
    assert len(server.requests) == 1
    assert "UnknownModelError" in failure.message
    assert "does not exist" in failure.message
    assert "PROVIDER/MODEL" in failure.message


async def test_model_without_provider_prefix_is_unknown(
    build_runtime: Any, local_spec: Any
) -> None:
    spec = local_spec(model="no-such-model-xyz", api_base=None)
    finish, _ = await _finish(build_runtime(LiteLLMExecutor(), spec=spec))
    failure = _failure(finish)
    assert "UnknownModelError" in failure.message
    assert "no-such-model-xyz" in failure.message
    assert "openai/gpt-4o-mini" in failure.message  # the example of the right form
    assert "cannot tell the provider" in failure.message


async def test_400_bad_request_is_not_retried(
    server: Any, build_runtime: Any, fast_retry: RetryPolicy
) -> None:
    server.add(Reply.error(400, "Invalid 'messages[1].content'", type="invalid_request_error"))
    finish, _ = await _finish(build_runtime(LiteLLMExecutor(retry=fast_retry)))
    failure = _failure(finish)
    assert len(server.requests) == 1
    assert "ProviderBadRequest" in failure.message
    assert "Invalid 'messages[1].content'" in failure.message


async def test_connection_refused_is_unavailable(local_spec: Any, fast_retry: RetryPolicy) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = local_spec(api_base=f"http://127.0.0.1:{port}/v1", timeout_s=2)
    sleeps = Sleeps()
    with pytest.raises(ProviderUnavailable) as info:
        await _stream(LiteLLMExecutor(retry=fast_retry, sleep=sleeps), spec)
    assert info.value.attempts == 4
    assert info.value.error_class == "connection" and info.value.status is None
    assert len(sleeps.delays) == 3


# -- units: retry policy, Retry-After, exception mapping ---------------------------------


def test_retry_policy_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(max_retries=5, initial_delay_s=1, multiplier=2, max_delay_s=5, jitter=0)
    assert [policy.delay(n) for n in range(6)] == [1, 2, 4, 5, 5, None]
    jittered = RetryPolicy(initial_delay_s=1, jitter=0.5)
    samples = {jittered.delay(0) for _ in range(50)}
    assert all(0.5 <= s <= 1 for s in samples if s is not None)
    assert len(samples) > 1
    assert RetryPolicy(max_retries=0).delay(0) is None
    assert RetryPolicy().delay(0, retry_after=12) == 12
    assert RetryPolicy(max_retry_after_s=10).delay(0, retry_after=12) is None


def test_retry_after_header_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3
    assert retry_after_seconds({"retry-after": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (retry_after_seconds({"retry-after": when}) or 0) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    assert retry_after_seconds(None) is None


def _litellm_errors() -> list[tuple[Exception, type[ProviderError], bool]]:
    import httpx

    ll = import_litellm()
    req = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    resp = httpx.Response(429, headers={"retry-after": "2"}, request=req)
    kw = {"llm_provider": "openai", "model": "gpt-x"}
    return [
        (ll.RateLimitError("slow", response=resp, **kw), ProviderRateLimited, True),
        (ll.AuthenticationError("bad key", **kw), ProviderAuthError, False),
        (
            ll.PermissionDeniedError("nope", response=httpx.Response(403, request=req), **kw),
            ProviderAuthError,
            False,
        ),
        (ll.NotFoundError("no model", **kw), UnknownModelError, False),
        (ll.BadRequestError("bad", **kw), ProviderBadRequest, False),
        (ll.ContextWindowExceededError("too long", **kw), ProviderContextLength, False),
        (ll.Timeout("slow", **kw), ProviderTimeout, True),
        (ll.APIConnectionError("refused", request=req, **kw), ProviderConnectionError, True),
        (ll.InternalServerError("boom", **kw), ProviderUnavailable, True),
        (ll.ServiceUnavailableError("down", **kw), ProviderUnavailable, True),
        (TimeoutError(), ProviderTimeout, True),
        (RuntimeError("weird"), ProviderError, False),
    ]


def test_litellm_exceptions_map_by_type() -> None:
    ll = import_litellm()
    for exc, expected, retryable in _litellm_errors():
        error = classify(
            exc,
            ll,
            provider="openai",
            model="gpt-x",
            key_env="OPENAI_API_KEY",
            api_base=None,
            timeout_s=5,
        )
        assert type(error) is expected, (exc, error)
        assert error.retryable is retryable, exc
        assert "openai model 'gpt-x'" in str(error)
        if expected is ProviderRateLimited:
            assert error.retry_after == 2
        if expected is ProviderAuthError:
            assert "OPENAI_API_KEY" in str(error)
