"""Model specs, pricing, token usage, and the scripted executor."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from awaken_runtime import (
    InferenceRequest,
    InferenceResponse,
    LlmExecutor,
    Message,
    ModelSpec,
    Pricing,
    ScriptedExecutor,
    ScriptedTurn,
    ScriptExhausted,
    StreamDelta,
    TokenUsage,
    ToolCall,
)


def spec(pricing: Pricing | None = None) -> ModelSpec:
    return ModelSpec(id="m", provider="scripted", model="s", pricing=pricing)


def request(text: str = "hi", step: int = 0) -> InferenceRequest:
    return InferenceRequest(model=spec(), messages=[Message.user(text)], tools=[], step=step)


async def collect(ex: ScriptedExecutor, req: InferenceRequest | None = None) -> list[object]:
    return [item async for item in ex.stream(req or request())]


# --- ModelSpec.cost --------------------------------------------------------


def test_cost_without_pricing_is_none() -> None:
    assert spec().cost(TokenUsage(prompt_tokens=1000, completion_tokens=1000)) is None


def test_cost_input_and_output() -> None:
    s = spec(Pricing(input_per_mtok=3.0, output_per_mtok=15.0))
    usage = TokenUsage(prompt_tokens=1_000_000, completion_tokens=200_000)
    assert s.cost(usage) == pytest.approx(3.0 + 3.0)


def test_cost_charges_cached_prompt_tokens_at_cached_rate() -> None:
    s = spec(Pricing(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5))
    usage = TokenUsage(prompt_tokens=1000, cached_tokens=400, completion_tokens=100)
    expected = (600 * 2.0 + 400 * 0.5 + 100 * 8.0) / 1_000_000
    assert s.cost(usage) == pytest.approx(expected)


def test_cost_cached_tokens_without_cached_rate_use_input_rate() -> None:
    s = spec(Pricing(input_per_mtok=2.0, output_per_mtok=8.0))
    with_cache = TokenUsage(prompt_tokens=1000, cached_tokens=400, completion_tokens=100)
    without = TokenUsage(prompt_tokens=1000, completion_tokens=100)
    assert s.cost(with_cache) == pytest.approx(s.cost(without))  # type: ignore[arg-type]
    assert s.cost(without) == pytest.approx((1000 * 2.0 + 100 * 8.0) / 1_000_000)


def test_cost_cached_tokens_never_exceed_prompt_tokens() -> None:
    s = spec(Pricing(input_per_mtok=2.0, output_per_mtok=0.0, cached_input_per_mtok=0.0))
    usage = TokenUsage(prompt_tokens=100, cached_tokens=500)
    cost = s.cost(usage)
    assert cost is not None
    assert cost == pytest.approx(0.0)
    assert cost >= 0


def test_cost_zero_usage_is_zero() -> None:
    s = spec(Pricing(input_per_mtok=2.0, output_per_mtok=8.0))
    assert s.cost(TokenUsage()) == 0


def test_free_model_costs_zero_not_none() -> None:
    assert spec(Pricing()).cost(TokenUsage(prompt_tokens=10, completion_tokens=10)) == 0


def test_model_spec_is_immutable_and_serializable() -> None:
    s = ModelSpec(
        id="fast",
        provider="openai",
        model="gpt-x",
        context_window=128_000,
        pricing=Pricing(input_per_mtok=1, output_per_mtok=2, cached_input_per_mtok=0.1),
    )
    assert ModelSpec.model_validate_json(s.model_dump_json()) == s
    with pytest.raises(ValidationError):
        s.model = "other"  # type: ignore[misc]


# --- TokenUsage ------------------------------------------------------------


def test_token_usage_addition_sums_every_field() -> None:
    a = TokenUsage(prompt_tokens=1, completion_tokens=2, cached_tokens=3, reasoning_tokens=4)
    b = TokenUsage(prompt_tokens=10, completion_tokens=20, cached_tokens=30, reasoning_tokens=40)
    total = a + b
    assert isinstance(total, TokenUsage)
    assert total == TokenUsage(
        prompt_tokens=11, completion_tokens=22, cached_tokens=33, reasoning_tokens=44
    )
    assert total.total_tokens == 33
    # operands are unchanged
    assert a.prompt_tokens == 1
    assert b.prompt_tokens == 10


def test_token_usage_zero_is_identity_and_sum_accumulates() -> None:
    a = TokenUsage(prompt_tokens=5, completion_tokens=7)
    assert a + TokenUsage() == a
    assert TokenUsage() + a == a
    assert sum([a, a, a], TokenUsage()) == TokenUsage(prompt_tokens=15, completion_tokens=21)


def test_token_usage_sum_is_serializable() -> None:
    total = TokenUsage(prompt_tokens=1) + TokenUsage(completion_tokens=2)
    assert TokenUsage.model_validate_json(total.model_dump_json()) == total


# --- ScriptedExecutor ------------------------------------------------------


def test_scripted_executor_is_an_llm_executor() -> None:
    assert isinstance(ScriptedExecutor(["x"]), LlmExecutor)


async def test_streams_text_chunks_then_exactly_one_response_last() -> None:
    ex = ScriptedExecutor(["Hello, world!"], chunk_size=4)
    items = await collect(ex)
    deltas, final = items[:-1], items[-1]
    assert all(isinstance(d, StreamDelta) for d in deltas)
    assert [d.text for d in deltas] == ["Hell", "o, w", "orld", "!"]  # type: ignore[attr-defined]
    assert all(d.channel == "text" for d in deltas)  # type: ignore[attr-defined]
    assert isinstance(final, InferenceResponse)
    assert sum(isinstance(i, InferenceResponse) for i in items) == 1
    assert final.text == "Hello, world!"
    assert final.finish_reason == "stop"
    assert final.tool_calls == []


async def test_without_chunk_size_text_is_one_delta() -> None:
    items = await collect(ScriptedExecutor(["Hello, world!"]))
    assert [type(i) for i in items] == [StreamDelta, InferenceResponse]
    assert items[0].text == "Hello, world!"  # type: ignore[attr-defined]


async def test_reasoning_streams_before_text_on_its_own_channel() -> None:
    turn = ScriptedTurn(text="42", reasoning="thinking hard")
    items = await collect(ScriptedExecutor([turn], chunk_size=8))
    deltas = items[:-1]
    channels = [d.channel for d in deltas]  # type: ignore[attr-defined]
    assert channels == ["reasoning", "reasoning", "text"]
    assert "".join(d.text for d in deltas if d.channel == "reasoning") == "thinking hard"  # type: ignore[attr-defined]
    final = items[-1]
    assert isinstance(final, InferenceResponse)
    assert final.reasoning == "thinking hard"
    assert final.text == "42"


async def test_tool_call_turn() -> None:
    turn = ScriptedTurn.call("add", {"a": 1, "b": 2})
    items = await collect(ScriptedExecutor([turn]))
    assert len(items) == 1  # no text, so no deltas
    final = items[0]
    assert isinstance(final, InferenceResponse)
    assert final.finish_reason == "tool_calls"
    (call,) = final.tool_calls
    assert call.name == "add"
    assert call.arguments == {"a": 1, "b": 2}
    assert call.id


def test_scripted_call_turns_get_distinct_call_ids() -> None:
    a = ScriptedTurn.call("f")
    b = ScriptedTurn.call("f")
    assert a.tool_calls[0].id != b.tool_calls[0].id
    assert a.tool_calls[0].arguments == {}


async def test_default_usage_is_nonzero_and_explicit_usage_is_kept() -> None:
    usage = TokenUsage(prompt_tokens=7, completion_tokens=3, cached_tokens=2)
    ex = ScriptedExecutor(["some answer text", ScriptedTurn(text="x", usage=usage)])
    first = (await collect(ex))[-1]
    second = (await collect(ex))[-1]
    assert isinstance(first, InferenceResponse)
    assert first.usage.prompt_tokens > 0
    assert first.usage.completion_tokens > 0
    assert isinstance(second, InferenceResponse)
    assert second.usage == usage


async def test_turns_are_served_in_order_and_requests_recorded() -> None:
    ex = ScriptedExecutor(["one", "two"])
    r1, r2 = request("a"), request("b", step=1)
    assert (await collect(ex, r1))[-1].text == "one"  # type: ignore[attr-defined]
    assert (await collect(ex, r2))[-1].text == "two"  # type: ignore[attr-defined]
    assert ex.calls == 2
    assert ex.requests == [r1, r2]


async def test_function_of_request_turns() -> None:
    def echo(req: InferenceRequest) -> str:
        return f"you said {req.messages[-1].text!r} at step {req.step}"

    def call_if_asked(req: InferenceRequest) -> ScriptedTurn:
        if "add" in req.messages[-1].text:
            return ScriptedTurn(tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 1})])
        return ScriptedTurn(text="no tool")

    ex = ScriptedExecutor([echo, call_if_asked, call_if_asked])
    first = (await collect(ex, request("ping", step=3)))[-1]
    assert isinstance(first, InferenceResponse)
    assert first.text == "you said 'ping' at step 3"
    second = (await collect(ex, request("please add")))[-1]
    assert isinstance(second, InferenceResponse)
    assert [c.name for c in second.tool_calls] == ["add"]
    third = (await collect(ex, request("nothing")))[-1]
    assert isinstance(third, InferenceResponse)
    assert third.text == "no tool"
    assert third.tool_calls == []


async def test_script_exhausted_message() -> None:
    ex = ScriptedExecutor(["one", "two"])
    await collect(ex)
    await collect(ex)
    with pytest.raises(ScriptExhausted) as info:
        await collect(ex)
    message = str(info.value)
    assert "2 turns" in message
    assert "turn 3" in message
    assert "repeat=True" in message
    assert ex.calls == 2


async def test_empty_script_is_exhausted_even_with_repeat() -> None:
    for repeat in (False, True):
        with pytest.raises(ScriptExhausted, match="0 turns"):
            await collect(ScriptedExecutor([], repeat=repeat))


async def test_repeat_loops_forever() -> None:
    ex = ScriptedExecutor(["a", "b"], repeat=True)
    texts = []
    for _ in range(5):
        final = (await collect(ex))[-1]
        assert isinstance(final, InferenceResponse)
        texts.append(final.text)
    assert texts == ["a", "b", "a", "b", "a"]
    assert ex.calls == 5


async def test_request_recording_can_be_turned_off() -> None:
    ex = ScriptedExecutor(["a"])
    ex.record_requests = False
    await collect(ex)
    assert ex.requests == []
    assert ex.calls == 1


async def test_turn_function_returning_something_else_names_the_turn() -> None:
    ex = ScriptedExecutor(["fine", lambda req: 42])  # type: ignore[list-item,arg-type,return-value]
    await collect(ex)
    with pytest.raises(TypeError, match=r"scripted turn 2 produced int.*ScriptedTurn or a str"):
        await collect(ex)


async def test_turns_replaced_after_construction_are_served_as_written() -> None:
    # Responses of fixed turns are prepared up front; a turn put in later must not be
    # answered with a stale prepared response.
    ex = ScriptedExecutor([ScriptedTurn(text="old")], repeat=True)
    assert (await collect(ex))[-1].text == "old"  # type: ignore[attr-defined]
    ex.turns[0] = ScriptedTurn(text="new")
    assert (await collect(ex))[-1].text == "new"  # type: ignore[attr-defined]


async def test_repeated_call_turns_get_fresh_ids_each_cycle() -> None:
    ex = ScriptedExecutor([ScriptedTurn.call("f", {"x": 1})], repeat=True)
    ids = []
    for _ in range(3):
        final = (await collect(ex))[-1]
        assert isinstance(final, InferenceResponse)
        ids.append(final.tool_calls[0].id)
    assert len(set(ids)) == 3


def test_fallback_classes_are_checked() -> None:
    import pydantic

    from awaken_runtime import ModelSpec

    spec = ModelSpec(id="m", provider="p", model="a", fallbacks=("b",), fallback_on=("auth",))
    assert spec.fallback_on == ("auth",)
    with pytest.raises(pydantic.ValidationError, match="rate_limit"):
        ModelSpec(id="m", provider="p", model="a", fallback_on=("ratelimit",))
