"""Token counting: encoding choice, offline loading, tiktoken parity, caching."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_compact import (
    STATS,
    CompactWarning,
    EncodingUnavailable,
    EstimatedEncoding,
    ThreadTokens,
    TokenCounter,
    counting_encoding,
    encoding_for_model,
    load_encoding,
)
from awaken_ext_compact import _encodings as encodings
from awaken_ext_compact._bound import BoundTokens
from awaken_ext_compact._index import TokenSums
from awaken_runtime import ContentPart, Message, Scope, ToolCall, ToolDescriptor

CORPUS = [
    "",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog. " * 20,
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\nprint(add(1, 2))\n",
    '{"name": "lookup", "arguments": {"query": "naïve café", "n": 12345678}}',
    "日本語のテキストと中文文本，还有한국어 텍스트.",  # noqa: RUF001
    "emoji 🎉🚀👩‍💻 and symbols ∑∫√≈ ≠ ≤ ≥",
    "   leading and trailing whitespace \t\n\n  \r\n",
    "numbers 3.14159 2718281828 1,000,000 0x1F 1e-9",
    "special markers are text here: <|endoftext|> <|fim_prefix|> <|endofprompt|>",
    "Mixed CASE words, CamelCaseIdentifiers and snake_case_names; don't won't I'll we've",
    "a" * 5000,
    "\n".join(f"line {i}: value={i * i}" for i in range(300)),
]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "o200k_base"),
        ("openai/gpt-4o-mini", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("azure/o4-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("claude-3-5-sonnet", "cl100k_base"),
        ("ollama/llama3", "cl100k_base"),
        ("omni-model", "cl100k_base"),
    ],
)
def test_encoding_for_model(model: str, expected: str) -> None:
    assert encoding_for_model(model) == expected


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "p50k_base"])
def test_offline_encoding_matches_tiktoken(
    name: str, reference_encoding: Callable[[str], Any]
) -> None:
    ours = load_encoding(name)
    ref = reference_encoding(name)
    assert ours.name == ref.name
    assert ours._pat_str == ref._pat_str
    assert ours._special_tokens == ref._special_tokens
    assert ours.n_vocab == ref.n_vocab
    for text in CORPUS:
        assert ours.encode_ordinary(text) == ref.encode(text, disallowed_special=())


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_counter_text_equals_tiktoken(name: str, reference_encoding: Callable[[str], Any]) -> None:
    counter = TokenCounter(load_encoding(name))
    ref = reference_encoding(name)
    for text in CORPUS:
        assert counter.text(text) == len(ref.encode(text, disallowed_special=()))


def _corpus_messages() -> list[Message]:
    out: list[Message] = [Message.system("You are terse.")]
    for i, text in enumerate(CORPUS):
        out.append(Message.user(text))
        call = ToolCall(id=f"c{i}", name="lookup", arguments={"query": text[:40], "n": i})
        out.append(Message.assistant(text[:10] or None, [call]))
        out.append(Message.tool(f"c{i}", text[::-1], name="lookup"))
    out.append(
        Message(
            role="user",
            content=[
                ContentPart(type="text", text="part one "),
                ContentPart(type="text", text="two"),
            ],
            name="alice",
        )
    )
    return out


def test_request_count_equals_cookbook_formula(ref_count: Callable[..., int]) -> None:
    counter = TokenCounter(load_encoding("o200k_base"))
    messages = _corpus_messages()
    tools = [
        ToolDescriptor(
            id="lookup",
            description="Look something up.",
            parameters={"type": "object", "properties": {"query": {"type": "string"}}},
        )
    ]
    ours = 3 + counter.messages(messages) + counter.tools(tools)
    assert ours == ref_count(messages, tools)


class _Spy:
    """Wraps an encoding and counts encode calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.name = inner.name

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return list(self.inner.encode_ordinary(text))


def test_message_counts_are_cached_per_id() -> None:
    spy = _Spy(load_encoding("o200k_base"))
    counter = TokenCounter(spy)  # type: ignore[arg-type]
    message = Message.user("hello there, how are you?")
    first = counter.message(message)
    calls = spy.calls
    assert counter.message(message) == first
    assert spy.calls == calls
    assert counter.cached == 1


def test_thread_index_ingests_only_new_messages() -> None:
    spy = _Spy(load_encoding("o200k_base"))
    counter = TokenCounter(spy)  # type: ignore[arg-type]
    index = ThreadTokens(counter)
    messages = [Message.user(f"message {i}") for i in range(50)]
    assert index.sync(messages) == 50
    calls = spy.calls
    messages.append(Message.user("one more"))
    assert index.sync(messages) == 1
    assert spy.calls == calls + 1  # one content encode; the role count is cached
    assert index.tokens(0) == sum(counter.message(m) for m in messages)
    assert index.tokens(10, 20) == sum(counter.message(m) for m in messages[10:20])
    assert index.last_user == 50


_TEXTS = st.one_of(
    st.sampled_from(["", "ok", "naïve café ☕", "这是测试", "x" * 400, "word " * 120]),
    st.text(max_size=60),
)


@st.composite
def _thread(draw: st.DrawFn) -> list[Message]:
    """Users, assistants with tool calls, tool results short and long, in any order."""
    out: list[Message] = []
    for i in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["user", "assistant", "call", "tool"]))
        text = draw(_TEXTS)
        if kind == "user":
            out.append(Message.user(text))
        elif kind == "assistant":
            out.append(Message.assistant(text))
        elif kind == "call":
            call = ToolCall(id=f"c{i}", name="look", arguments={"q": text})
            out.append(Message.assistant(None, [call]))
        else:
            out.append(Message(role="tool", content=text, tool_call_id=f"c{i}", name="look"))
    return out


def _state(index: TokenSums) -> tuple[Any, ...]:
    return (
        index.prefix,
        index.ids,
        index.pos,
        index.last_user,
        index.big,
        index._cuts,
    )


@settings(max_examples=150, deadline=None)
@given(
    thread=_thread(),
    steps=st.lists(st.integers(1, 9), min_size=1, max_size=30),
    cap=st.sampled_from([None, 1, 8, 40, "a tool result's own cost"]),
    pick=st.integers(0, 29),
    bound=st.booleans(),
)
def test_ingesting_a_few_messages_at_a_time_equals_one_batch(
    thread: list[Message], steps: list[int], cap: int | str | None, pick: int, bound: bool
) -> None:
    # A step adds a message or two (ingested one by one), a new index a whole thread
    # (ingested in batch passes): both must leave the same sums, cuts and positions.
    def index(limit: int | None) -> TokenSums:
        if bound:
            return BoundTokens(limit)
        return ThreadTokens(TokenCounter(EstimatedEncoding("o200k_base")), limit)

    if isinstance(cap, str):  # a result costing exactly the cap is not cut
        results = [m for m in thread if m.role == "tool"] or thread
        cap = index(None)._count(results[pick % len(results)])

    whole, stepped = index(cap), index(cap)
    whole.sync(thread)
    n = cuts = 0
    for size in steps:
        n = min(len(thread), n + size)
        stepped.sync(thread[:n])
        cuts += stepped.last_cut
    stepped.sync(thread)
    cuts += stepped.last_cut
    assert _state(stepped) == _state(whole)
    assert cuts == whole.last_cut
    assert stepped.tokens(0) == whole.tokens(0)


def test_thread_index_recovers_from_a_rolled_back_tail() -> None:
    counter = TokenCounter(load_encoding("o200k_base"))
    index = ThreadTokens(counter)
    messages = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    index.sync(messages)
    rolled = [*messages[:2], Message.assistant("different"), Message.assistant("more")]
    index.sync(rolled)
    assert index.ids == [m.id for m in rolled]
    assert index.last_user == 0
    assert index.tokens(0) == sum(counter.message(m) for m in rolled)
    assert index.index_of(messages[2].id) is None


@pytest.fixture
def offline_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No encoding file anywhere and an empty in-memory cache."""
    monkeypatch.setattr(encodings, "_litellm_dir", lambda: None)
    monkeypatch.setattr(encodings, "_loaded", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setattr(encodings.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    return tmp_path


def test_missing_encoding_fails_with_the_fix(offline_nothing: Path) -> None:
    with pytest.raises(EncodingUnavailable) as info:
        load_encoding("o200k_base")
    message = str(info.value)
    assert "'o200k_base'" in message
    assert "pip install litellm" in message
    assert "allow_download" in message
    assert "o200k_base.tiktoken" in message


def test_configured_cache_dir_and_hash_check(offline_nothing: Path) -> None:
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("litellm not installed")
    source = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    cache = offline_nothing / "mine"
    cache.mkdir()
    # A corrupted copy under the cache name is ignored ...
    (cache / "fb374d419588a4632f3f557e76b4b70aebbca790").write_bytes(b"garbage 1\n")
    with pytest.raises(EncodingUnavailable):
        load_encoding("o200k_base", cache_dir=str(cache))
    # ... and a good copy named <encoding>.tiktoken is used.
    shutil.copy(source / "fb374d419588a4632f3f557e76b4b70aebbca790", cache / "o200k_base.tiktoken")
    enc = load_encoding("o200k_base", cache_dir=str(cache))
    assert enc.encode_ordinary("hello world") == [24912, 2375]


async def test_without_an_encoding_runs_compact_on_an_estimate(
    offline_nothing: Path, rig: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(encodings, "_warned", set())
    r = rig(["Answer with plenty of words to fill the window up. " * 12])
    try:
        with pytest.warns(CompactWarning) as record, caplog.at_level(logging.WARNING):
            for i in range(12):
                state = await r.run(f"question {i}: " + "more detail about it. " * 30)
                assert state.end_cause is not None and state.end_cause.kind == "natural_end"
    finally:
        monkeypatch.undo()
    (warning,) = [w for w in record if issubclass(w.category, CompactWarning)]
    message = str(warning.message)
    assert "estimate instead of 'o200k_base'" in message and "allow_download" in message
    assert caplog.text.count("counting tokens with an estimate") == 1
    assert r.compactor.calls >= 1  # compaction happened, on estimated counts
    stats = dict(r.states[-1].state.get((Scope.RUN, STATS.key)) or {})
    assert stats.get("failures", 0) == 0


def test_estimate_counts_and_cuts() -> None:
    est = EstimatedEncoding("o200k_base")
    counter = TokenCounter(est)
    assert counter.estimated and counter.name == "estimate:o200k_base"
    assert counter.text("") == 0
    assert counter.text("hello world") == 4  # 11 bytes / 3 -> 4; pieces: hell, o, worl, d
    assert counter.text("这是测试") == 4  # 12 bytes / 3
    head, full = counter.truncate("word " * 100, 10)
    assert full == counter.text("word " * 100) and counter.text(head) <= 10
    assert ("word " * 100).startswith(head) and len(head) > 20


def test_estimate_is_conservative_on_prose(reference_encoding: Callable[[str], Any]) -> None:
    text = Path(__file__).read_text() + (Path(__file__).parent / "conftest.py").read_text()
    real = len(reference_encoding("o200k_base").encode_ordinary(text))
    estimate = EstimatedEncoding("o200k_base").count(text)
    assert real <= estimate <= 2 * real


def test_missing_tiktoken_falls_back_to_the_estimate(
    offline_nothing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_tiktoken(name: str, **_kw: Any) -> Any:
        raise ImportError("No module named 'tiktoken'")

    monkeypatch.setattr(encodings, "load_encoding", no_tiktoken)
    monkeypatch.setattr(encodings, "_warned", set())
    with pytest.warns(CompactWarning, match="pip install tiktoken"):
        enc = counting_encoding("cl100k_base")
    assert isinstance(enc, EstimatedEncoding)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counting_encoding("cl100k_base")  # warned once per process


def test_single_message_or_no_trigger_never_loads_the_tokenizer() -> None:
    code = (
        "import asyncio, sys\n"
        "from awaken_ext_compact import CompactPlugin\n"
        "from awaken_runtime import ModelSpec\n"
        "from awaken_runtime.testing import MODEL_ID, PROVIDER_ID, scripted_runtime\n"
        "no_window = scripted_runtime(['ok'], plugins=[CompactPlugin()], repeat=True,\n"
        "                             plugin_config={'compact': {}})\n"
        "spec = ModelSpec(id=MODEL_ID, provider=PROVIDER_ID, model='gpt-4o', context_window=900)\n"
        "window = scripted_runtime(['ok'], plugins=[CompactPlugin()], repeat=True, model=spec,\n"
        "                          plugin_config={'compact': {}})\n"
        "async def main():\n"
        "    for i in range(3):  # no window: a few messages, far from trigger_messages\n"
        "        await no_window.runtime.run('agent', f'hello {i}', thread_id='t')\n"
        "        # a window, but each request carries one message: nothing to compact\n"
        "        await window.runtime.run('agent', 'hi ' * 2000, thread_id=f'fresh-{i}')\n"
        "asyncio.run(main())\n"
        "assert len(no_window.executor.requests) == len(window.executor.requests) == 3\n"
        "assert 'tiktoken' not in sys.modules, 'tiktoken loaded though nothing could trigger'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_does_not_load_tiktoken() -> None:
    code = (
        "import sys, awaken_runtime, awaken_ext_compact, awaken_ext_compact._hooks\n"
        "from awaken_ext_compact import CompactPlugin\n"
        "CompactPlugin().resolve(None)\n"
        "assert 'tiktoken' not in sys.modules, 'tiktoken imported eagerly'\n"
        "assert 'litellm' not in sys.modules, 'litellm imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tool_schema_json_is_stable() -> None:
    from awaken_ext_compact._counter import tool_schema_json

    d = ToolDescriptor(id="t", description="d", parameters={"type": "object", "properties": {}})
    assert json.loads(tool_schema_json(d))["function"]["name"] == "t"


def test_tool_counts_follow_the_descriptors_of_each_request() -> None:
    from awaken_ext_compact._counter import tool_schema_json

    counter = TokenCounter(load_encoding("o200k_base"))
    small = ToolDescriptor(id="a", description="short", parameters={"type": "object"})
    big = ToolDescriptor(id="b", description="a much longer description " * 20)
    other = ToolDescriptor(id="a", description="short, but not the same", parameters={})

    def expect(*tools: ToolDescriptor) -> int:
        return sum(counter.text(tool_schema_json(d)) for d in tools)

    tools = [small, big]
    assert counter.tools(tools) == expect(small, big)
    assert counter.tools(tools) == expect(small, big)  # the same descriptors again
    tools[1] = other  # the same list object, changed in place: counted again
    assert counter.tools(tools) == expect(small, other)
    assert counter.tools([small]) == expect(small)  # a shorter request
    assert counter.tools([small, big, other]) == expect(small, big, other)
    assert counter.tools([]) == 0


def test_failed_download_falls_back_to_the_estimate(
    offline_nothing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # allow_download on a machine without network: tiktoken's fetch fails (the
    # no_network fixture makes every download raise), the run keeps counting.
    import tiktoken.registry

    monkeypatch.setattr(encodings, "_warned", set())
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "p50k_base", raising=False)  # no memo
    with pytest.warns(CompactWarning, match="tiktoken could not provide encoding 'p50k_base'"):
        enc = counting_encoding("p50k_base", allow_download=True)
    assert isinstance(enc, EstimatedEncoding) and enc.name == "estimate:p50k_base"
