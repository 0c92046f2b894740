"""litellm's end-of-stream success logging: skipped when nothing listens, else kept."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openai_server import Reply, ToolCallSpec, UsageSpec

from awaken_runtime import InferenceRequest, InferenceResponse, LiteLLMExecutor, Message
from awaken_runtime.models.litellm._executor import import_litellm
from awaken_runtime.models.litellm._stream import StreamAssembler


def _empty_callbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh, empty litellm callback lists (litellm copies callbacks between them)."""
    litellm = import_litellm()
    for name in dir(litellm):
        if "callback" in name and isinstance(getattr(litellm, name), list):
            monkeypatch.setattr(litellm, name, [])


@pytest.fixture(autouse=True)
def no_callbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    _empty_callbacks(monkeypatch)
    monkeypatch.setattr(import_litellm(), "max_budget", 0.0)


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every result litellm's async success handler was called with."""
    from litellm.litellm_core_utils.litellm_logging import Logging

    seen: list[Any] = []
    real = Logging.async_success_handler

    async def spy(self: Any, result: Any = None, *args: Any, **kwargs: Any) -> Any:
        seen.append(result)
        return await real(self, result, *args, **kwargs)

    monkeypatch.setattr(Logging, "async_success_handler", spy)
    yield seen


def _logger(events: list[int]) -> Any:
    """A litellm ``CustomLogger`` noting each success's prompt tokens in ``events``."""
    from litellm.integrations.custom_logger import CustomLogger

    class Logger(CustomLogger):  # type: ignore[misc]
        async def async_log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            events.append(response_obj.usage.prompt_tokens)

    return Logger()


def _reply(n: int) -> Reply:
    call = ToolCallSpec(f"call_{n}", "add", f'{{"a": 1, "b": {n}}}')
    return Reply(text=f"step {n}", tool_calls=[call], usage=UsageSpec(20, 8))


async def _stream(spec: Any, executor: LiteLLMExecutor) -> InferenceResponse:
    request = InferenceRequest(model=spec, messages=[Message.user("hi")], tools=[])
    items = [item async for item in executor.stream(request)]
    response = items[-1]
    assert isinstance(response, InferenceResponse)
    return response


async def _until(done: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


async def test_a_stream_nobody_listens_to_ends_before_litellm_logs_it(
    server: Any, local_spec: Any, handled: list[Any]
) -> None:
    server.add(_reply(1), _reply(2))
    executor = LiteLLMExecutor()
    for n in (1, 2):
        response = await _stream(local_spec(), executor)
        # The answer is whole: text, the call, usage and finish reason came before the stop.
        assert response.text == f"step {n}"
        calls = [(c.id, c.arguments) for c in response.tool_calls]
        assert calls == [(f"call_{n}", {"a": 1, "b": n})]
        assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (20, 8)
        assert response.finish_reason == "tool_calls"
    await asyncio.sleep(0.2)  # litellm's handler would run on the loop's next turns
    assert handled == []
    assert len(server.requests) == 2


async def test_always_reads_every_stream_to_its_end(
    server: Any, local_spec: Any, handled: list[Any]
) -> None:
    server.add(_reply(1))
    response = await _stream(local_spec(), LiteLLMExecutor(success_logging="always"))
    assert response.usage.prompt_tokens == 20
    await _until(lambda: bool(handled))
    assert len(handled) == 1


def _global_logger(monkeypatch: pytest.MonkeyPatch, events: list[int]) -> dict[str, Any]:
    monkeypatch.setattr(import_litellm(), "callbacks", [_logger(events)])
    return {}


def _global_function(monkeypatch: pytest.MonkeyPatch, events: list[int]) -> dict[str, Any]:
    async def log(kwargs: Any, response: Any, start: Any, end: Any) -> None:
        events.append(response.usage.prompt_tokens)

    monkeypatch.setattr(import_litellm(), "success_callback", [log])
    return {}


def _request_logger(monkeypatch: pytest.MonkeyPatch, events: list[int]) -> dict[str, Any]:
    return {"callbacks": [_logger(events)]}


def _request_function(monkeypatch: pytest.MonkeyPatch, events: list[int]) -> dict[str, Any]:
    async def log(kwargs: Any, response: Any, start: Any, end: Any) -> None:
        events.append(response.usage.prompt_tokens)

    return {"success_callback": [log]}


@pytest.mark.parametrize(
    "listen", [_global_logger, _global_function, _request_logger, _request_function]
)
async def test_a_listening_callback_hears_every_request_as_if_read_to_the_end(
    server: Any, local_spec: Any, monkeypatch: pytest.MonkeyPatch, listen: Any
) -> None:
    heard: dict[str, list[int]] = {}
    for mode in ("always", "auto"):
        _empty_callbacks(monkeypatch)  # each mode starts from empty lists again
        events: list[int] = []
        extra = listen(monkeypatch, events)
        spec = local_spec(extra=extra)
        executor = LiteLLMExecutor(success_logging=mode)  # type: ignore[arg-type]
        for n in (1, 2, 3):
            server.add(_reply(n))
            await _stream(spec, executor)
        await _until(lambda events=events: events.count(20) >= 3)
        await asyncio.sleep(0.1)  # and nothing more arrives
        heard[mode] = events
        # litellm empties the per-request lists it is given: the spec's own stay whole.
        for value in spec.extra.values():
            assert len(value) == 1
    assert heard["auto"].count(20) == 3
    assert heard["auto"] == heard["always"]


@pytest.mark.parametrize("mode", ["auto", "always"])
async def test_a_retried_request_keeps_its_per_request_callback(
    server: Any, local_spec: Any, fast_retry: Any, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """litellm moves async callbacks out of the list a call is given: each attempt gets its own."""
    events: list[int] = []
    extra = _request_function(monkeypatch, events)
    server.add(Reply.error(503, "busy"), _reply(1), Reply.error(503, "busy"), _reply(2))
    spec = local_spec(extra=extra)
    executor = LiteLLMExecutor(retry=fast_retry, success_logging=mode)  # type: ignore[arg-type]
    for _ in (1, 2):
        await _stream(spec, executor)
    await _until(lambda: len(events) >= 2)
    await asyncio.sleep(0.1)  # and nothing more arrives
    assert events == [20, 20]
    assert len(server.requests) == 4
    assert len(spec.extra["success_callback"]) == 1


async def test_litellms_budget_tracking_counts_as_listening(
    server: Any, local_spec: Any, handled: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(import_litellm(), "max_budget", 100.0)
    server.add(_reply(1))
    await _stream(local_spec(), LiteLLMExecutor())
    await _until(lambda: bool(handled))
    assert len(handled) == 1


@pytest.mark.parametrize("value", ["never", "AUTO", "", None, True, 1])
def test_an_unknown_success_logging_value_is_refused_by_name(value: Any) -> None:
    with pytest.raises(ValueError, match=r"success_logging=.*'auto'.*'always'"):
        LiteLLMExecutor(success_logging=value)


def _chunk(*, finish: str | None = None, usage: bool = False, choices: bool = True) -> Any:
    out: dict[str, Any] = {"id": "r", "model": "m"}
    if choices:
        out["choices"] = [{"delta": {"content": "x"}, "finish_reason": finish}]
    else:
        out["choices"] = []
    if usage:
        out["usage"] = {"prompt_tokens": 20, "completion_tokens": 8}
    return out


@pytest.mark.parametrize(
    ("chunks", "ended"),
    [
        # litellm's shape: deltas, the finish, then a usage-only chunk.
        ([_chunk(), _chunk(finish="stop"), _chunk(usage=True, choices=False)], True),
        # usage before any finish reason (a provider reporting it up front): more may come
        ([_chunk(usage=True, choices=False), _chunk()], False),
        ([_chunk(), _chunk(usage=True, choices=False)], False),
        # usage riding on the finish chunk itself: a usage-only chunk may still follow
        ([_chunk(), _chunk(finish="stop", usage=True)], False),
        # a finish without usage
        ([_chunk(), _chunk(finish="length")], False),
        # usage with an empty (falsy) body after the finish
        ([_chunk(finish="stop"), {"choices": [], "usage": {}}], False),
        ([_chunk(finish="stop"), {"choices": [], "usage": None}], False),
    ],
)
def test_a_stream_has_ended_only_at_a_usage_only_chunk_after_a_finish(
    chunks: list[Any], ended: bool
) -> None:
    stream = StreamAssembler()
    for chunk in chunks:
        stream.feed(chunk)
    assert stream.ended is ended
