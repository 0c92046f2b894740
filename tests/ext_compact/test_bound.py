"""Byte bounds: a thread is tokenized only once a bound says its count can matter.

The hook plans each request with UTF-8 byte counts first (an upper bound of
every encoding's tokens) and counts for real only when that bound reaches the
trigger or a tool result's bound exceeds the cut limit. Whatever it does, a
step must stage exactly what a hook that counted every message stages; the
bound index must never serve a count of a transcript it no longer sees (a
different thread, the same length with other messages, a rolled-back tail,
a new process, a tampered checkpoint).
"""

from __future__ import annotations

import asyncio
import random
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_compact import (
    COUNTS,
    STATS,
    SUMMARY,
    CompactConfig,
    CompactPlugin,
    EstimatedEncoding,
    TokenCounter,
    load_encoding,
    tool_result_cap,
)
from awaken_ext_compact._bound import BOUND_NAME, BoundTokens, arguments_bound, message_bound
from awaken_ext_compact._counter import arguments_json
from awaken_ext_compact._state import StateReader
from awaken_runtime import (
    CONTEXT_MESSAGES,
    REQUEST_WINDOW,
    STANDING_CONTEXT,
    Band,
    ContentPart,
    ContextMessage,
    InferenceRequest,
    InferenceResponse,
    KeepLast,
    Message,
    MessageView,
    ModelSpec,
    PhaseContext,
    PhaseHookPoint,
    RunInfo,
    Scope,
    Set,
    StateValueError,
    Store,
    ToolCall,
    ToolDescriptor,
    Transcript,
)
from awaken_runtime.messages._transcript import ChainView, HeadedView

SYSTEM = Message.system("You are a test agent.")
WORDS = ["the", "tool", "reads", "données", "数据", "🎉", "a", "long", "result", "x_y", "{}"]


def _model(window: int, model: str = "gpt-4o") -> ModelSpec:
    return ModelSpec(
        id="m", provider="p", model=model, context_window=window, max_output_tokens=200
    )


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def _grow(items: list[Message], rng: random.Random, big: int = 80) -> None:
    """One more exchange: a user message, an answer, or a tool call and its result."""
    kind = rng.randrange(3)
    i = len(items)
    if kind == 0:
        items.append(Message.user(f"question {i}: {_text(rng, 3, 40)}"))
    elif kind == 1:
        call = ToolCall(id=f"call_{i}", name="lookup", arguments={"q": _text(rng, 1, 4)})
        result = Message.tool(call.id, _text(rng, 5, big), name="lookup")
        items += [Message.assistant(None, [call]), result]
    else:
        items.append(Message.assistant(_text(rng, 5, 60)))


def _thread(n: int, seed: int = 1) -> list[Message]:
    rng = random.Random(seed)
    items = [Message.user("start")]
    while len(items) < n:
        _grow(items, rng)
    return items


_HOOKS: weakref.WeakKeyDictionary[CompactPlugin, dict[CompactConfig, Any]] = (
    weakref.WeakKeyDictionary()
)


class Runner:
    """A ChildRunner whose ``infer`` answers every summary request the same way."""

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        return InferenceResponse(text=f"summary of {len(request.messages[1].text)} characters")


async def _step(
    plugin: CompactPlugin,
    items: list[Message],
    data: dict[Any, Any],
    config: CompactConfig,
    *,
    window: int = 128_000,
    thread: str = "thread",
    keep_last: int | None = None,
    system: Message = SYSTEM,
    model: str = "gpt-4o",
) -> dict[str, Any]:
    """One BEFORE_INFERENCE hook call; returns what it staged, by key. Thread state and
    the run's stats stay in ``data`` (context and window are the next request's only).
    Like a runtime, each plugin resolves a config once and calls that hook every step."""
    hooks = _HOOKS.setdefault(plugin, {})
    if config not in hooks:
        (hooks[config],) = plugin.resolve(config).hooks_at(PhaseHookPoint.BEFORE_INFERENCE)
    hook = hooks[config]
    view = MessageView(items, 0, len(items))
    if keep_last is None:
        messages: Any = HeadedView([system], items, len(items))
    else:
        messages = ChainView([[system], Transcript(items).window(KeepLast(keep_last=keep_last))])
    ctx = PhaseContext(
        point=PhaseHookPoint.BEFORE_INFERENCE,
        store=Store(data),
        run=RunInfo("run", thread, "agent", "default", "default", 1),
        messages=view,
        plugin_id="compact",
        request=InferenceRequest(model=_model(window, model), messages=messages, tools=[]),
        children=Runner(),  # type: ignore[arg-type]
    )
    reaction = await hook(ctx)
    staged: dict[str, Any] = {}
    for command in reaction.commands if reaction is not None else ():
        assert isinstance(command.action, Set)
        staged[command.key] = command.action.value
        if command.key not in (CONTEXT_MESSAGES, REQUEST_WINDOW):
            data[(command.scope, command.key)] = command.action.value
    return staged


def _shape(staged: dict[str, Any], *, stats: bool = True) -> dict[str, Any]:
    """What shapes the request (and the run's stats, unless ``stats`` is false: a new
    process re-ingests the messages after the checkpoint and counts their cuts again)."""
    left_out = (COUNTS.key,) if stats else (COUNTS.key, STATS.key)
    return {k: v for k, v in staged.items() if k not in left_out}


async def _exact(config: CompactConfig, window: int, thread: str = "thread") -> CompactPlugin:
    """A plugin whose index of ``thread`` counts tokens from the first step (no bounds)."""
    plugin = CompactPlugin(clock=lambda: 1000.0)
    counter = await plugin.caches.counter(config, "gpt-4o")
    cap = tool_result_cap(config, window - 200)
    plugin.caches.indexes.get(thread, counter, cap)
    return plugin


def _counted(plugin: CompactPlugin) -> int:
    return sum(counter.cached for counter in plugin.caches.counters.values())


def _bound_index(plugin: CompactPlugin, config: CompactConfig, window: int) -> Any:
    cap = tool_result_cap(config, window - 200)
    return plugin.caches.indexes.find("thread", BOUND_NAME, cap)


TEXTS = [
    "",
    "plain ascii text, with punctuation!?",
    "日本語のテキストと中文文本",
    "emoji 🎉🚀👩‍💻 ∑∫√≈",
    "lone surrogates \ud800 and \udfff here",
    "a pair written as two code points \ud83c\udf89",
    "special markers are text: <|endoftext|> <|endofprompt|>",
    "   \t\n\n  \r\n",
    "x" * 3000,
    "€" * 500,
]


def _messages(text: str) -> list[Message]:
    call = ToolCall(id=f"id {text[:5]}", name=f"tool{text[:3]}", arguments={"q": text, "n": 3})
    return [
        Message.user(text),
        Message.assistant(text, [call, ToolCall(id="c2", name="t", arguments={})]),
        Message.tool(call.id, text, name=f"name {text[:4]}"),
        Message(
            role="user",
            content=[
                ContentPart(type="text", text=text),
                ContentPart(type="image_url", image_url={"url": "http://x/y.png"}),  # type: ignore[call-arg]
                ContentPart(type="text"),
            ],
        ),
        Message.assistant(None),
    ]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base", "estimate"])
def test_a_message_bound_is_at_least_its_count(encoding: str) -> None:
    enc = EstimatedEncoding("cl100k_base") if encoding == "estimate" else load_encoding(encoding)
    counter = TokenCounter(enc)
    for text in TEXTS:
        for message in _messages(text):
            assert message_bound(message) >= counter.count_message(message), (text, message)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, categories=None), max_size=300))
def test_a_random_text_bound_is_at_least_its_count(text: str) -> None:
    counter = TokenCounter(load_encoding("o200k_base"))
    estimate = TokenCounter(EstimatedEncoding("o200k_base"))
    for message in _messages(text):
        bound = message_bound(message)
        assert bound >= counter.count_message(message)
        assert bound >= estimate.count_message(message)


PLAIN_ARGUMENTS = [
    {},
    {"q": "order 4471"},
    {"q": "", "n": 3, "neg": -12345678901234567890, "ok": True, "no": False, "none": None},
    {"path": "/tmp/x y.txt", "mode": "w+", "count": 0},
]
OTHER_ARGUMENTS = [
    {"q": 'say "hi"'},
    {'k"': 1},
    {"q": "a back\\slash"},
    {"q": 'a "quoted" \\ backslash'},
    {"q": "line\nbreak\ttab\x00\x7f"},
    {"q": "données 数据 🎉 \ud800"},
    {"ratio": 0.1, "big": 1e300, "nan": float("nan"), "inf": float("inf")},
    {"nested": {"a": [1, 2, {"b": None}]}, "list": ["x", 'y"']},
    {"clé": 1, 'k"ey': 2},
]


@pytest.mark.parametrize("arguments", PLAIN_ARGUMENTS + OTHER_ARGUMENTS)
def test_an_arguments_bound_is_at_least_their_json(arguments: dict[str, Any]) -> None:
    size = len(arguments_json(arguments).encode("utf-8", "surrogatepass"))
    bound = arguments_bound(arguments)
    assert bound >= size
    if arguments in PLAIN_ARGUMENTS and not any(type(v) is bool for v in arguments.values()):
        assert bound == size  # measured exactly, without encoding


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.one_of(st.text(max_size=20), st.integers(), st.booleans(), st.none(), st.floats()),
        max_size=5,
    )
)
def test_a_random_arguments_bound_is_at_least_their_json(arguments: dict[str, Any]) -> None:
    assert arguments_bound(arguments) >= len(
        arguments_json(arguments).encode("utf-8", "surrogatepass")
    )


async def test_a_thread_under_the_trigger_is_not_tokenized() -> None:
    config = CompactConfig(keep_recent_messages=4)
    items = _thread(600)
    plugin, data = CompactPlugin(), {}
    staged = await _step(plugin, items, data, config)
    assert _counted(plugin) <= 1  # the system prompt
    assert COUNTS.get(Store(data)).encoding == BOUND_NAME  # type: ignore[union-attr]
    reference = await _exact(config, 128_000)
    assert _shape(staged) == _shape(await _step(reference, items, {}, config))
    assert _counted(reference) >= len(items)


@pytest.mark.parametrize("seed", range(6))
async def test_bound_first_stages_what_counting_everything_stages(seed: int) -> None:
    """Side by side on a growing thread, through triggers, compactions, cuts and drops,
    with a new process now and then: every step stages the same request."""
    rng = random.Random(seed)
    window = rng.choice([8000, 12_000])
    keep_last = rng.choice([None, None, 40])
    config = CompactConfig(
        keep_recent_messages=rng.randrange(0, 8),
        min_gain_tokens=rng.choice([0, 200]),
        max_tool_result_tokens=rng.choice([None, 120]),
    )
    items = [Message.user("start")]
    plugin, data = CompactPlugin(clock=lambda: 1000.0), {}
    reference, ref_data = await _exact(config, window), {}
    modes = set()
    restarted = False
    for step in range(70):
        for _ in range(rng.randint(1, 3)):
            _grow(items, rng, big=400 if rng.random() < 0.1 else 40)
        if rng.random() < 0.1:  # a new process: only the thread state survives
            plugin = CompactPlugin(clock=lambda: 1000.0)
            restarted = True
        args = {"window": window, "keep_last": keep_last}
        got = await _step(plugin, items, data, config, **args)
        want = await _step(reference, items, ref_data, config, **args)
        assert _shape(got, stats=not restarted) == _shape(want, stats=not restarted), step
        assert SUMMARY.get(Store(data)) == SUMMARY.get(Store(ref_data))
        modes.add("bound" if _bound_index(plugin, config, window) is not None else "count")
    assert modes == {"bound", "count"}  # both ways, and the switch, were taken


def _entries(size: int, tag: str) -> dict[str, Any]:
    """Stored context entries (what other plugins staged) holding ``size`` words."""
    text = " ".join(f"{tag}{k}" for k in range(size))
    entry = ContextMessage(key=tag, band=Band.SESSION, content=text)
    return {tag: entry.model_dump(mode="json")}


_STANDING = [None, _entries(5, "s"), _entries(900, "s")]
_STAGED = [None, _entries(5, "c"), _entries(900, "c")]
_SYSTEMS = [SYSTEM, Message.system("You are a test agent. " + "Be brief. " * 700)]


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.integers(0, 2),
            st.integers(0, 2),
            st.integers(0, 1),
            st.booleans(),
            st.booleans(),
            st.sampled_from(["gpt-4o", "gpt-4"]),  # o200k_base, cl100k_base
        ),
        min_size=2,
        max_size=8,
    )
)
def test_each_plan_counts_the_context_and_system_prompt_it_carries(
    steps: list[tuple[int, int, int, bool, bool, str]],
) -> None:
    asyncio.run(_plans_follow_the_fixed_part(steps))


async def _plans_follow_the_fixed_part(steps: list[tuple[int, int, int, bool, bool, str]]) -> None:
    # The hook keeps the count of the staged context and the system prompt while they
    # are the same objects. Whatever they change to (a big entry staged or withdrawn, an
    # equal copy, a longer prompt, a model with another encoding) and whatever the thread
    # gains, every step must stage what a new plugin, counting all of it afresh, stages.
    config = CompactConfig(keep_recent_messages=4, min_gain_tokens=0)
    items = _thread(30, seed=7)
    rng = random.Random(7)
    kept, data = CompactPlugin(clock=lambda: 1000.0), {}
    for standing, staged, system, copy, grow, model in steps:
        if grow:
            _grow(items, rng)
        context = {
            STANDING_CONTEXT: _STANDING[standing],
            CONTEXT_MESSAGES: _STAGED[staged],
        }
        for key, value in context.items():
            if value is not None:
                data[(Scope.RUN, key)] = dict(value) if copy else value
            else:
                data.pop((Scope.RUN, key), None)
        before = dict(data)
        prompt = _SYSTEMS[system]
        got = await _step(kept, items, data, config, window=3_000, system=prompt, model=model)
        fresh = CompactPlugin(clock=lambda: 1000.0)
        want = await _step(fresh, items, before, config, window=3_000, system=prompt, model=model)
        assert _shape(got, stats=False) == _shape(want, stats=False)


async def test_the_fixed_part_is_recounted_for_another_encoding_or_a_changed_tool_list() -> None:
    # The same context, prompt and tool list objects, asked for by two models with other
    # encodings in turn, then with the list changed in place: each answer must be what a
    # hook that never counted anything before gives.
    config = CompactConfig()

    def hook() -> Any:
        (found,) = CompactPlugin().resolve(config).hooks_at(PhaseHookPoint.BEFORE_INFERENCE)
        return found

    plugin = CompactPlugin()
    o200k = await plugin.caches.counter(config, "gpt-4o")
    cl100k = await plugin.caches.counter(config, "gpt-4")
    assert o200k.name != cl100k.name
    # Text the two encodings split differently (simple English words they split alike).
    text = "数据を検索します。données 🎉 "
    entry = ContextMessage(key="s", band=Band.SESSION, content=text * 40)
    standing, staged = {"s": entry.model_dump(mode="json")}, _STAGED[1]
    prompt = Message.system(text * 20)
    tools = [ToolDescriptor(id="lookup", description=text * 30)]
    kept = hook()
    answers = []
    for counter, change in [(o200k, None), (cl100k, None), (o200k, None), (o200k, "tools")]:
        if change == "tools":
            tools[0] = ToolDescriptor(id="lookup", description="Short.")
        got = kept._fixed_tokens(counter, tools, standing, staged, prompt)
        assert got == hook()._fixed_tokens(counter, tools, standing, staged, prompt)
        answers.append(got)
    assert len(set(answers)) == 3  # each change moved the count


@pytest.mark.parametrize("change", ["same length, other messages", "rolled back and regrown"])
async def test_the_bound_index_follows_a_changed_transcript(change: str) -> None:
    config = CompactConfig()
    items = _thread(300)
    plugin, data = CompactPlugin(), {}
    await _step(plugin, items, data, config)
    if change == "same length, other messages":
        items = _thread(len(items), seed=5)
    else:
        n = len(items)
        del items[-7:]
        rng = random.Random(3)
        while len(items) < n:
            _grow(items, rng)
        del items[n:]
    staged = await _step(plugin, items, data, config)
    index = _bound_index(plugin, config, 128_000)
    fresh = BoundTokens(index.big_limit)
    fresh.sync(items)
    assert index.tokens(0) == fresh.tokens(0) and index.last_user == fresh.last_user
    assert COUNTS.get(Store(data)).through_id == items[-1].id  # type: ignore[union-attr]
    assert _shape(staged) == _shape(await _step(await _exact(config, 128_000), items, {}, config))


async def test_threads_keep_their_own_bounds() -> None:
    config = CompactConfig(context_window=6000, keep_recent_messages=2)
    plugin = CompactPlugin(clock=lambda: 1000.0)
    threads = {}
    for name, size, seed in (("a", 30, 1), ("b", 400, 2)):
        reference = await _exact(config, 6000, thread=name)
        threads[name] = (_thread(size, seed=seed), {}, reference, {})
    rng = random.Random(4)
    for _ in range(4):
        for name, (items, data, reference, ref_data) in threads.items():
            got = await _step(plugin, items, data, config, thread=name)
            want = await _step(reference, items, ref_data, config, thread=name)
            assert _shape(got) == _shape(want), name
            _grow(items, rng)
    assert SUMMARY.get(Store(threads["b"][1])) is not None  # b compacted, a did not
    assert SUMMARY.get(Store(threads["a"][1])) is None


async def test_a_summary_moves_the_bounded_span() -> None:
    config = CompactConfig()
    items = _thread(500)
    plugin, data = CompactPlugin(), {}
    for covered in (0, 100, 300):
        if covered:
            summary = {"text": "s", "covered_through": items[covered - 1].id}
            data[(Scope.THREAD, SUMMARY.key)] = {**summary, "covered_count": covered}
        staged = await _step(plugin, items, data, config)
        ref_data = {k: v for k, v in data.items() if k[1] != COUNTS.key}
        assert _shape(staged) == _shape(
            await _step(await _exact(config, 128_000), items, ref_data, config)
        )
        found = COUNTS.get(Store(data))
        assert found is not None and found.start == covered and found.encoding == BOUND_NAME
    assert _counted(plugin) <= 1


async def test_a_new_process_takes_the_bound_checkpoint() -> None:
    config = CompactConfig()
    items = _thread(500)
    data: dict[Any, Any] = {}
    await _step(CompactPlugin(), items, data, config)
    items += _thread(6, seed=9)
    fresh = CompactPlugin()
    staged = await _step(fresh, items, data, config)
    index = _bound_index(fresh, config, 128_000)
    assert index.anchor == 0 and len(index.ids) <= 7  # the new messages, not the thread
    assert _shape(staged) == _shape(await _step(await _exact(config, 128_000), items, {}, config))


@pytest.mark.parametrize("kind", ["rolled back", "other cap", "moved", "wrong user", "garbage"])
async def test_a_stale_bound_checkpoint_is_ignored(kind: str) -> None:
    config = CompactConfig()
    items = _thread(300)
    data: dict[Any, Any] = {}
    await _step(CompactPlugin(), items, data, config)
    key = (Scope.THREAD, COUNTS.key)
    bad = dict(data[key])
    if kind == "rolled back":
        del items[-3:]
        items += _thread(3, seed=4)
    elif kind == "other cap":
        bad["cap"] = 17
    elif kind == "moved":
        bad["start"] += 1
    elif kind == "wrong user":
        bad["last_user"] = next(i for i, m in enumerate(items) if m.role != "user")
    else:
        bad = {"tokens": "many"}
    data[key] = bad
    fresh = CompactPlugin()
    staged = await _step(fresh, items, data, config)
    assert _bound_index(fresh, config, 128_000).anchor is None  # counted afresh
    found = COUNTS.get(Store(data))
    assert found is not None and found.through_id == items[-1].id
    assert _shape(staged) == _shape(await _step(await _exact(config, 128_000), items, {}, config))


async def test_a_checkpoint_found_to_fit_is_rechecked_once_the_thread_changes() -> None:
    config = CompactConfig()
    items = _thread(300)
    plugin, data = CompactPlugin(), {}
    await _step(plugin, items, data, config)
    await _step(plugin, items, data, config)  # the checkpoint is read and found to fit
    assert _bound_index(plugin, config, 128_000).checked is not None
    del items[-4:]  # rolled back below the checkpoint's last message
    items.append(Message.assistant("another ending"))
    staged = await _step(plugin, items, data, config)
    assert COUNTS.key in staged  # the stale checkpoint is replaced at once
    assert COUNTS.get(Store(data)).through_id == items[-1].id  # type: ignore[union-attr]


async def test_crossing_the_trigger_counts_and_checkpoints_exactly() -> None:
    window = 20_000
    config = CompactConfig()
    items = _thread(40)
    data: dict[Any, Any] = {}
    await _step(CompactPlugin(clock=lambda: 1000.0), items, data, config, window=window)
    assert COUNTS.get(Store(data)).encoding == BOUND_NAME  # type: ignore[union-attr]
    reference, ref_data = await _exact(config, window), {}
    await _step(reference, items, ref_data, config, window=window)
    plugin = CompactPlugin(clock=lambda: 1000.0)  # a new process, on the bound checkpoint
    rng = random.Random(2)
    while COUNTS.get(Store(data)).encoding == BOUND_NAME:  # type: ignore[union-attr]
        _grow(items, rng)
        got = await _step(plugin, items, data, config, window=window)
        want = await _step(reference, items, ref_data, config, window=window)
        assert _shape(got) == _shape(want)
    assert COUNTS.get(Store(data)).encoding == "o200k_base"  # type: ignore[union-attr]
    assert _bound_index(plugin, config, window) is None  # the thread is counted from now on
    later = CompactPlugin()  # and a new process goes on counting from the checkpoint
    items += _thread(4, seed=8)
    await _step(later, items, data, config, window=window)
    assert _bound_index(later, config, window) is None and _counted(later) <= 6


def test_the_state_reader_validates_each_distinct_value_once() -> None:
    reader = StateReader(SUMMARY)
    data: dict[Any, Any] = {}
    assert reader.read(Store(data)) is None
    value = {"text": "one", "covered_through": "m1", "covered_count": 1}
    data[(Scope.THREAD, SUMMARY.key)] = value
    first = reader.read(Store(data))
    assert first is not None and first.text == "one"
    assert reader.read(Store(data)) is first
    assert reader.read(Store({(Scope.THREAD, SUMMARY.key): dict(value)})) is first  # equal data
    value["text"] = "two"  # changed in place: read again, not served from memory
    second = reader.read(Store(data))
    assert second is not None and second.text == "two"
    data[(Scope.THREAD, SUMMARY.key)] = {"text": 3}
    with pytest.raises(StateValueError):
        reader.read(Store(data))
    with pytest.raises(StateValueError):  # an invalid value is never remembered
        reader.read(Store(data))
