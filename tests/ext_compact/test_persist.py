"""Token counts that outlive the process: the checkpoint is right, used, and distrusted.

A "new process" is a new :class:`CompactPlugin` (its own counters and
indexes) reading the thread state an earlier one wrote. Its step must shape
the request exactly as an index that counted the whole thread does, while
counting only the messages after the checkpoint; a checkpoint that is stale,
foreign or corrupt is ignored and the span counted again.
"""

from __future__ import annotations

import logging
import random
from typing import Any

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
    plugin: CompactPlugin, items: list[Message], data: dict[Any, Any]
) -> dict[str, Any]:
    """One BEFORE_INFERENCE hook call; returns what it staged, by key."""
    (hook,) = plugin.resolve(CONFIG).hooks_at(PhaseHookPoint.BEFORE_INFERENCE)
    view = MessageView(items, 0, len(items))
    ctx = PhaseContext(
        point=PhaseHookPoint.BEFORE_INFERENCE,
        store=Store(data),
        run=RunInfo("run", "thread", "agent", "default", "default", 1),
        messages=view,
        plugin_id="compact",
        request=InferenceRequest(
            model=MODEL, messages=HeadedView([SYSTEM], items, len(items)), tools=[]
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


async def _reference(items: list[Message], data: dict[Any, Any]) -> dict[str, Any]:
    """The step of an index that counted the whole thread from its first message."""
    plugin = CompactPlugin()
    counter = await plugin.caches.counter(CONFIG, MODEL.model)
    index = plugin.caches.indexes.get("thread", counter, CONFIG.max_tool_result_tokens)
    index.sync(MessageView(items, 0, len(items)))
    return _shape(await _step(plugin, items, {k: v for k, v in data.items() if k[1] != COUNTS.key}))


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
    ["rolled back", "other encoding", "other cap", "moved", "wrong user", "garbage", "not a dict"],
)
async def test_a_stale_or_corrupt_checkpoint_is_recounted(
    thread: Any, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    items, data = thread
    await _step(CompactPlugin(), items, data)
    key = (Scope.THREAD, COUNTS.key)
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
