"""Token counts that outlive the process: the checkpoint is right, used, and distrusted.

A "new process" is a new :class:`CompactPlugin` (its own counters and
indexes) reading the thread state an earlier one wrote. Its step must shape
the request exactly as an index that counted the whole thread does, while
counting only the messages after the checkpoint; a checkpoint that is stale,
foreign or corrupt is ignored and the span counted again.
"""

from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
from typing import Any, SupportsIndex

import pytest

from awaken_ext_compact import (
    COUNTS,
    STATS,
    SUMMARY,
    CompactConfig,
    CompactPlugin,
    ThreadTokens,
    TokenCounter,
    load_encoding,
)
from awaken_ext_compact._persist import CHECKPOINT_EVERY
from awaken_ext_compact._plan import tool_result_cap
from awaken_runtime import (
    InferenceRequest,
    Message,
    MessageView,
    ModelSpec,
    PhaseContext,
    PhaseHookPoint,
    RunInfo,
    Scope,
    Set,
    Store,
    ToolCall,
)
from awaken_runtime.messages._transcript import HeadedView

MODEL = ModelSpec(
    id="m", provider="p", model="gpt-4o", context_window=128_000, max_output_tokens=4096
)
LIMIT = 128_000 - 4096
"""The model's usable input."""
CONFIG = CompactConfig(keep_recent_messages=10, max_tool_result_tokens=40)
SYSTEM = Message.system("You are a test agent.")
WORDS = [
    "the",
    "model",
    "reads",
    "a",
    "long",
    "tool",
    "result",
    "about",
    "données",
    "and",
    "数据",
    "then",
    "answers",
]


def _thread(n: int, seed: int = 1) -> list[Message]:
    rng = random.Random(seed)
    out: list[Message] = []
    i = 0
    while len(out) < n:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 80)))
        if i % 3 == 0:
            out.append(Message.user(f"question {i}: {text}"))
        elif i % 3 == 1:
            call = ToolCall(id=f"call_{i}", name="lookup", arguments={"q": str(i)})
            out += [Message.assistant(None, [call]), Message.tool(call.id, text, name="lookup")]
        else:
            out.append(Message.assistant(text))
        i += 1
    return out


def _summary(items: list[Message], covered: int) -> dict[str, Any]:
    return {
        "text": "what happened so far",
        "covered_through": items[covered - 1].id,
        "covered_count": covered,
        "tokens": 5,
    }


async def _step(
    plugin: CompactPlugin,
    items: list[Message],
    data: dict[Any, Any],
    config: CompactConfig = CONFIG,
    carried: int | None = None,
) -> dict[str, Any]:
    """One BEFORE_INFERENCE hook call (the request carries the system prompt and the
    last ``carried`` messages, default all); returns what it staged, by key."""
    (hook,) = plugin.resolve(config).hooks_at(PhaseHookPoint.BEFORE_INFERENCE)
    view = MessageView(items, 0, len(items))
    ctx = PhaseContext(
        point=PhaseHookPoint.BEFORE_INFERENCE,
        store=Store(data),
        run=RunInfo("run", "thread", "agent", "default", "default", 1),
        messages=view,
        plugin_id="compact",
        request=InferenceRequest(
            model=MODEL,
            messages=HeadedView([SYSTEM], items, len(items))
            if carried is None
            else [SYSTEM, *items[len(items) - carried :]],
            tools=[],
        ),
    )
    reaction = await hook(ctx)
    staged: dict[str, Any] = {}
    for command in reaction.commands if reaction is not None else ():
        assert isinstance(command.action, Set)
        staged[command.key] = command.action.value
        if command.scope is Scope.THREAD:
            data[(Scope.THREAD, command.key)] = command.action.value
    return staged


def _shape(staged: dict[str, Any]) -> dict[str, Any]:
    """What shapes the request (the run's stats count what each index cut itself)."""
    return {k: v for k, v in staged.items() if k not in (COUNTS.key, STATS.key)}


def _counted(plugin: CompactPlugin) -> int:
    return sum(counter.cached for counter in plugin.caches.counters.values())


async def _reference(
    items: list[Message],
    data: dict[Any, Any],
    config: CompactConfig = CONFIG,
    carried: int | None = None,
) -> dict[str, Any]:
    """The step of an index that counted the whole thread from its first message."""
    plugin = CompactPlugin()
    counter = await plugin.caches.counter(config, MODEL.model)
    cap = tool_result_cap(config, LIMIT)
    index = plugin.caches.indexes.get("thread", counter, cap)
    index.sync(MessageView(items, 0, len(items)))
    rest = {k: v for k, v in data.items() if k[1] != COUNTS.key}
    return _shape(await _step(plugin, items, rest, config, carried))


@pytest.fixture
def thread() -> tuple[list[Message], dict[Any, Any]]:
    items = _thread(400)
    return items, {(Scope.THREAD, SUMMARY.key): _summary(items, 100)}


async def test_the_checkpoint_counts_the_request_span(thread: Any) -> None:
    items, data = thread
    staged = await _step(CompactPlugin(), items, data)
    found = COUNTS.get(Store(data))
    assert found is not None and COUNTS.key in staged
    counter = TokenCounter(load_encoding("o200k_base"))
    full = ThreadTokens(counter, CONFIG.max_tool_result_tokens)
    full.sync(MessageView(items, 0, len(items)))
    assert (found.start, found.through) == (100, len(items) - 1)
    assert (found.start_id, found.through_id) == (items[100].id, items[-1].id)
    assert found.tokens == full.tokens(100, len(items))
    assert [c[0] for c in found.cuts] == [i for i in full.big if i >= 100]
    assert found.cuts and found.last_user == full.last_user


async def test_a_new_process_counts_only_what_came_after_the_checkpoint(thread: Any) -> None:
    items, data = thread
    await _step(CompactPlugin(), items, data)
    items += _thread(5, seed=2)
    fresh = CompactPlugin()
    staged = await _step(fresh, items, data)
    assert _counted(fresh) <= 5 + 1  # the new messages (and the system prompt)
    assert _shape(staged) == await _reference(items, data)


async def test_the_checkpoint_is_refreshed_every_few_steps(thread: Any) -> None:
    items, data = thread
    plugin = CompactPlugin()
    await _step(plugin, items, data)
    written = []
    for i in range(2 * CHECKPOINT_EVERY):
        items.append(Message.user(f"more {i}"))
        written.append(COUNTS.key in await _step(plugin, items, data))
    assert 1 <= sum(written) <= 2
    found = COUNTS.get(Store(data))
    assert found is not None and len(items) - 1 - found.through < CHECKPOINT_EVERY


def _spoil(kind: str, raw: dict[str, Any], items: list[Message]) -> Any:
    bad = dict(raw)
    if kind == "rolled back":
        del items[-3:]
        items += _thread(3, seed=9)
    elif kind == "other encoding":
        bad["encoding"] = "cl100k_base"
    elif kind == "other cap":
        bad["cap"] = 1000
    elif kind == "moved":
        bad["start"] = bad["start"] + 1
    elif kind == "wrong user":
        bad["last_user"] = bad["through"]
    elif kind == "garbage":
        return {"tokens": "many", "start": -1}
    elif kind == "not a dict":
        return [1, 2, 3]
    return bad


@pytest.mark.parametrize(
    "kind",
    [
        "rolled back",
        "other encoding",
        "other cap",
        "moved",
        "wrong user",
        "garbage",
        "not a dict",
        "other thread",
    ],
)
async def test_a_stale_or_corrupt_checkpoint_is_recounted(
    thread: Any, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    items, data = thread
    await _step(CompactPlugin(), items, data)
    key = (Scope.THREAD, COUNTS.key)
    if kind == "other thread":  # the same shape (length, summary position), other messages
        other = _thread(len(items), seed=5)
        other_data = {(Scope.THREAD, SUMMARY.key): _summary(other, 100)}
        await _step(CompactPlugin(), other, other_data)
        data[key] = other_data[key]
        assert data[key]["start"] == 100 and data[key]["through"] == len(items) - 1
    else:
        data[key] = _spoil(kind, data[key], items)
    fresh = CompactPlugin()
    with caplog.at_level(logging.WARNING, "awaken_ext_compact"):
        staged = await _step(fresh, items, data)
    assert _counted(fresh) >= len(items) - 100  # the whole span again
    found = COUNTS.get(Store(data))  # and a good checkpoint replaces the bad one
    assert found is not None and found.through_id == items[-1].id
    assert _shape(staged) == await _reference(items, data)
    if kind in ("garbage", "not a dict"):
        assert "unreadable token checkpoint" in caplog.text


@pytest.mark.parametrize("seed", range(8))
def test_a_restored_index_answers_like_a_full_one(seed: int) -> None:
    rng = random.Random(seed)
    items = _thread(300, seed=seed)
    counter = TokenCounter(load_encoding("o200k_base"))
    view = MessageView(items, 0, len(items))
    full = ThreadTokens(counter, 40)
    full.sync(view)
    start, through = rng.randrange(0, 150), rng.randrange(150, 290)
    restored = ThreadTokens(counter, 40)
    span = (start, through, full.tokens(start, through + 1))
    restored.restore(
        view,
        span,
        full.last_user if full.last_user <= through else -1,
        [c for c in full.cuts(start, through + 1)],
    )
    restored.sync(view, start)
    n = len(items)
    assert restored.tokens(start) == full.tokens(start)
    assert restored.replacements(start, n, items) == full.replacements(start, n, items)
    for _ in range(20):  # positions inside the checkpointed span are counted on demand
        a = rng.randrange(0, n)
        b = rng.randrange(a, n + 1)
        assert restored.tokens(a, b) == full.tokens(a, b)
        assert restored.first_start_within(a, n, 500) == full.first_start_within(a, n, 500)
        assert restored.replacements(a, b, items) == full.replacements(a, b, items)
    assert restored.last_user == full.last_user


UNCAPPED = CompactConfig(keep_recent_messages=10)
"""No tool result of these threads is cut (the cap is a quarter of the window): a step
then reads no message of the span but the new ones and the positions it checks (each
cut result is read to check a checkpoint and to stage its replacement)."""


class _Touched(list[Message]):
    """A transcript list that counts the messages read from it from Python: one per
    item iterated or indexed, a slice's length per slice."""

    touched = 0

    def __iter__(self) -> Any:
        for message in super().__iter__():
            self.touched += 1
            yield message

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        got = super().__getitem__(index)
        self.touched += len(got) if isinstance(index, slice) else 1
        return got


async def test_a_new_process_reads_only_the_end_of_the_thread(thread: Any) -> None:
    items, data = thread
    await _step(CompactPlugin(), items, data, UNCAPPED)
    grown = _Touched(items + _thread(5, seed=2))
    fresh = CompactPlugin()
    await fresh.caches.counter(UNCAPPED, MODEL.model)
    staged = await _step(fresh, grown, data, UNCAPPED)
    # The five new messages and a few positions checked; walking to the end of the
    # transcript (an islice of a view) would read all 405.
    assert grown.touched < 40
    assert _shape(staged) == await _reference(list(grown), data, UNCAPPED)


def _window_start(staged: dict[str, Any]) -> Any:
    return staged["awaken.request_window"]["start_after_message_id"]


async def test_a_stale_summary_position_is_looked_up_once(thread: Any) -> None:
    items, data = thread
    await _step(CompactPlugin(), items, data, UNCAPPED)  # the checkpoint starts after the summary
    summary = data[(Scope.THREAD, SUMMARY.key)]
    data[(Scope.THREAD, SUMMARY.key)] = {**summary, "covered_count": 90}  # the id is right
    grown = _Touched(items + _thread(5, seed=2))
    fresh = CompactPlugin()
    first = await _step(fresh, grown, data, UNCAPPED)
    assert _window_start(first) == items[99].id  # found by its id
    assert _shape(first) == await _reference(list(grown), data, UNCAPPED)
    grown.touched = 0
    second = await _step(fresh, grown, data, UNCAPPED)
    assert _shape(second) == _shape(first)
    assert grown.touched < 20  # not searched again


async def test_a_summary_naming_a_missing_message_is_ignored(
    thread: Any, caplog: pytest.LogCaptureFixture
) -> None:
    items, data = thread
    await _step(CompactPlugin(), items, data, UNCAPPED)  # the checkpoint starts after the summary
    summary = data[(Scope.THREAD, SUMMARY.key)]
    data[(Scope.THREAD, SUMMARY.key)] = {**summary, "covered_through": "no-such-message"}
    grown = _Touched(items + _thread(5, seed=2))
    fresh = CompactPlugin()
    carried = 200  # the context policy's window starts at message 205, after the summary's
    with caplog.at_level(logging.WARNING, "awaken_ext_compact"):
        first = await _step(fresh, grown, data, UNCAPPED, carried)
    assert "summary boundary no-such-message is not in thread" in caplog.text
    assert "compact.summary" not in first.get("awaken.context_messages", {})
    assert first.get("awaken.request_window") is None  # the policy's window, as it is
    assert _shape(first) == await _reference(list(grown), data, UNCAPPED, carried)
    found = COUNTS.get(Store(data))  # a checkpoint of the span the request carries
    assert found is not None and (found.start, found.through) == (205, len(grown) - 1)
    grown.touched = 0
    assert _shape(await _step(fresh, grown, data, UNCAPPED, carried)) == _shape(first)
    # Not the 205 messages before the span searched again (the request's copy of the
    # carried messages is the test's own).
    assert grown.touched - carried < 20


def test_the_first_step_of_a_new_process_builds_no_model() -> None:
    """Once the counter is loaded, the first step does not build a pydantic validator
    (about a millisecond each, on the event loop): the load built them, off the loop."""
    code = """
import asyncio, json
from pydantic import BaseModel
from awaken_ext_compact import SUMMARY, CompactConfig, CompactPlugin
from awaken_runtime import (InferenceRequest, Message, MessageView, ModelSpec, PhaseContext,
    PhaseHookPoint, RunInfo, Scope, Store)

items = [Message.user(f"question {i}") if i % 2 == 0 else Message.assistant(f"answer {i}")
         for i in range(40)]
summary = {"text": "earlier", "covered_through": items[29].id, "covered_count": 30}
plugin, config = CompactPlugin(), CompactConfig(context_window=100_000)
(hook,) = plugin.resolve(config).hooks_at(PhaseHookPoint.BEFORE_INFERENCE)
model = ModelSpec(id="m", provider="p", model="gpt-4o", max_output_tokens=1000)
ctx = PhaseContext(
    point=PhaseHookPoint.BEFORE_INFERENCE,
    store=Store({(Scope.THREAD, SUMMARY.key): summary}),
    run=RunInfo("run", "thread", "agent", "default", "default", 1),
    messages=MessageView(items, 0, len(items)),
    plugin_id="compact",
    request=InferenceRequest(model=model, messages=[Message.system("hi"), *items], tools=[]),
)
built = []
rebuild = BaseModel.model_rebuild.__func__

def spy(cls, *args, **kwargs):
    built.append(cls.__name__)
    return rebuild(cls, *args, **kwargs)

async def main():
    await plugin.caches.counter(config, model.model)
    BaseModel.model_rebuild = classmethod(spy)
    reaction = await hook(ctx)
    return sorted({c.key for c in reaction.commands})

print(json.dumps({"staged": asyncio.run(main()), "built": built}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert "awaken.context_messages" in got["staged"]  # it staged the summary entry
    assert got["built"] == []
