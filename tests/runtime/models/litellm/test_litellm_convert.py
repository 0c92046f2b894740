"""The executor's converted-message cache sends exactly what converting every message would.

Each request is checked against ``to_openai`` of the same messages: a
transcript that grows step by step, a message replaced under the same id,
request-only messages in front (a system prompt, a compaction summary), a
window that moves, a rolled-back tail, calls the runtime renamed, an
unrelated conversation under the same run id, and random mixes of all of
them; and the cache stays within its bounds.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply

from awaken_runtime import InferenceRequest, LiteLLMExecutor, Message, ModelSpec, ToolCall
from awaken_runtime.messages._message import PROVIDER_CALL_IDS, to_openai
from awaken_runtime.messages._transcript import ChainView, HeadedView, MessageView
from awaken_runtime.models.litellm._convert import ConvertedMessages


def _step(i: int, *, renamed: bool = False) -> list[Message]:
    call = ToolCall(id=f"run_{i}", name="lookup", arguments={"q": f"query {i}", "n": [i]})
    meta = {PROVIDER_CALL_IDS: {f"run_{i}": "call_0"}} if renamed else {}
    return [
        Message.assistant(f"step {i}", [call], metadata=meta),
        Message.tool(call.id, f"result {i}", name="lookup"),
    ]


def _check(cache: ConvertedMessages, run_id: str, messages: Any) -> list[dict[str, Any]]:
    got = cache.convert(run_id, messages)
    assert got == to_openai(list(messages))
    return got


def test_a_growing_transcript_converts_only_new_messages() -> None:
    system = Message.system("be brief")
    items = [Message.user("hi")]
    cache = ConvertedMessages()
    first = _check(cache, "r", HeadedView([system], items, len(items)))
    for i in range(20):
        items.extend(_step(i))
        got = _check(cache, "r", HeadedView([system], items, len(items)))
        assert got[0] is first[0]  # the cached dict, not a new conversion
    assert cache.held == 1 + len(items)


def test_a_message_replaced_under_the_same_id_is_converted_afresh() -> None:
    items = [Message.user("hi"), *_step(0), *_step(1)]
    cache = ConvertedMessages()
    _check(cache, "r", items)
    swapped = list(items)
    swapped[2] = items[2].model_copy(update={"content": "shortened"})  # same id
    got = _check(cache, "r", swapped)
    assert got[2]["content"] == "shortened"
    swapped[-1] = items[-1].model_copy(update={"content": "last, shortened"})
    _check(cache, "r", swapped)
    _check(cache, "r", items)  # and back to the originals


def test_request_only_messages_and_a_moving_window() -> None:
    system = Message.system("sys")
    items = [Message.user("hi")]
    for i in range(30):
        items.extend(_step(i))
    cache = ConvertedMessages()
    _check(cache, "r", HeadedView([system], items, len(items)))
    for start in (5, 11, 25, 40):
        summary = Message.system(f"summary of the first {start}")  # a new object every step
        items.extend(_step(100 + start))
        view = ChainView([[system, summary], MessageView(items, start, len(items))])
        _check(cache, "r", view)


def test_a_rolled_back_tail_replaced_by_other_messages() -> None:
    items = [Message.user("hi"), *_step(0)]
    cache = ConvertedMessages()
    _check(cache, "r", items)
    items.extend(_step(1))
    _check(cache, "r", items)
    del items[3:]  # the step did not finish
    items.extend(_step(2))
    _check(cache, "r", items)
    items.extend(_step(3))
    _check(cache, "r", items)
    assert cache.held == len(items)


@pytest.mark.parametrize("with_summary", [False, True])
def test_renamed_calls_keep_the_provider_ids(with_summary: bool) -> None:
    items = [Message.user("hi")]
    cache = ConvertedMessages()
    for i in range(6):
        items.extend(_step(i, renamed=True))
        head = [Message.system("summary")] if with_summary else []
        got = _check(cache, "r", [*head, *items])
        assert got[-1]["tool_call_id"] == "call_0"
    del items[5:]
    items.extend(_step(9, renamed=True))
    _check(cache, "r", items)


def test_another_conversation_under_the_same_run_id() -> None:
    cache = ConvertedMessages()
    _check(cache, "", [Message.user("one"), *_step(0)])
    _check(cache, "", [Message.user("two"), *_step(1)])
    _check(cache, "", [Message.user("two")])


@pytest.mark.parametrize("headed", [False, True])
def test_a_changed_result_does_not_leak_into_the_next_request(headed: bool) -> None:
    system = Message.system("sys")
    items = [Message.user("hi"), *_step(0)]
    cache = ConvertedMessages()

    def request() -> Any:
        return HeadedView([system], items, len(items)) if headed else [system, *items]

    _check(cache, "r", request())
    got = cache.convert("r", request())
    got.append({"role": "user", "content": "appended"})
    got[1] = {"role": "user", "content": "replaced"}
    items.extend(_step(1))
    _check(cache, "r", request())
    cache.convert("r", request()).pop()
    _check(cache, "r", request())


def test_memory_is_bounded() -> None:
    cache = ConvertedMessages(max_runs=3, max_messages=50)
    for r in range(10):
        _check(cache, f"run{r}", [Message.user(f"u{i}") for i in range(12)])
        assert cache.held <= 50
    big = [Message.user(f"u{i}") for i in range(60)]
    _check(cache, "big", big)  # larger than the whole cache: converted, not kept
    assert cache.held <= 50


@pytest.mark.parametrize("seed", range(40))
def test_random_histories_match_the_uncached_conversion(seed: int) -> None:
    rng = random.Random(seed)
    cache = ConvertedMessages(max_runs=2, max_messages=200)
    runs: dict[str, list[Message]] = {"a": [Message.user("a")], "b": [Message.user("b")]}
    system = Message.system("sys")
    for n in range(60):
        run_id = rng.choice("ab")
        items = runs[run_id]
        op = rng.random()
        if op < 0.5:
            items.extend(_step(n, renamed=rng.random() < 0.2))
        elif op < 0.6 and len(items) > 3:
            del items[rng.randrange(1, len(items)) :]
        elif op < 0.7:
            i = rng.randrange(len(items))
            items[i] = items[i].model_copy(update={"content": f"edited {n}"})
        else:
            items.append(Message.user(f"turn {n}"))
        shape = rng.random()
        if shape < 0.4:
            _check(cache, run_id, HeadedView([system], items, len(items)))
        elif shape < 0.7:
            start = rng.randrange(len(items))
            summary = Message.system(f"summary {n}")
            _check(
                cache, run_id, ChainView([[system, summary], MessageView(items, start, len(items))])
            )
        else:
            _check(cache, run_id, list(items))


async def test_the_server_gets_the_whole_transcript_every_step(
    server: OpenAIServer, local_spec: Any
) -> None:
    """litellm does not change the cached dicts: the next request is still exact."""
    executor = LiteLLMExecutor()
    spec: ModelSpec = local_spec()
    items = [Message.system("sys"), Message.user("hi")]
    for i in range(3):
        items.extend(_step(i))
        server.add(Reply(text="ok"))
        request = InferenceRequest(model=spec, messages=list(items), tools=[], run_id="r")
        async for _ in executor.stream(request):
            pass
        assert server.requests[-1].body["messages"] == to_openai(items)
