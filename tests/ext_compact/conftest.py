"""Shared fixtures for the awaken-ext-compact tests.

Modules run under ``--import-mode=importlib`` and cannot import this file, so
helpers are handed out as fixtures:

* ``no_network`` (autouse): tiktoken's downloader raises instead of fetching.
* ``reference_encoding(name)``: the encoding as tiktoken itself builds it, read
  from litellm's bundled cache through ``TIKTOKEN_CACHE_DIR`` (skips if absent).
* ``ref_count(messages, tools=())``: an independent cookbook count of a request.
* ``rig(...)``: a discovery-free runtime with agent ``main`` (compact enabled,
  scripted model ``main-model``) and agent ``summarizer`` (scripted model
  ``compactor-model`` on another provider); ``await rig.run(text)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from awaken_ext_compact import CompactPlugin
from awaken_ext_compact._encodings import _litellm_dir
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    InMemoryStore,
    Message,
    ModelSpec,
    RunState,
    Runtime,
    ScriptedExecutor,
    ThreadStore,
    ToolDescriptor,
    tool,
)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.load

    real = tiktoken.load.read_file

    def guarded(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise AssertionError(f"test tried to download {blobpath}")
        return real(blobpath)

    monkeypatch.setattr(tiktoken.load, "read_file", guarded)


@pytest.fixture
def reference_encoding(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Any]:
    import tiktoken
    import tiktoken.registry

    bundled = _litellm_dir()
    if bundled is None:
        pytest.skip("litellm's bundled tiktoken files are not installed")

    def get(name: str) -> Any:
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(bundled))
        tiktoken.registry.ENCODINGS.pop(name, None)
        return tiktoken.get_encoding(name)

    return get


def cookbook_count(enc: Any, messages: Sequence[Message], tools: Sequence[ToolDescriptor]) -> int:
    """OpenAI-cookbook request count, computed with tiktoken directly."""
    total = 3
    for m in messages:
        parts = (
            [m.content] if isinstance(m.content, str) else [p.text or "" for p in m.content or ()]
        )
        total += 3 + len(enc.encode(m.role))
        total += sum(len(enc.encode(text, disallowed_special=())) for text in parts)
        if m.name:
            total += len(enc.encode(m.name)) + 1
        if m.tool_call_id:
            total += len(enc.encode(m.tool_call_id))
        for call in m.tool_calls or ():
            args = json.dumps(call.arguments, ensure_ascii=False)
            total += (
                3 + len(enc.encode(call.id)) + len(enc.encode(call.name)) + len(enc.encode(args))
            )
    for d in tools:
        schema = {
            "type": "function",
            "function": {"name": d.id, "description": d.description, "parameters": d.parameters},
        }
        total += len(
            enc.encode(
                json.dumps(schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            )
        )
    return total


@pytest.fixture
def ref_count(reference_encoding: Callable[[str], Any]) -> Callable[..., int]:
    enc = reference_encoding("o200k_base")

    def count(messages: Sequence[Message], tools: Sequence[ToolDescriptor] = ()) -> int:
        return cookbook_count(enc, messages, tools)

    return count


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return f"result for {query}: " + "data " * 20


@dataclass
class Rig:
    runtime: Runtime
    main: ScriptedExecutor
    compactor: ScriptedExecutor
    store: ThreadStore
    thread_id: str = "thread-1"
    states: list[RunState] = field(default_factory=list)

    async def run(self, text: str, **kw: Any) -> RunState:
        state = await self.runtime.run("main", text, thread_id=self.thread_id, **kw)
        self.states.append(state)
        return state

    async def messages(self) -> list[Message]:
        from awaken_runtime import ScopeBinding

        snap = await self.store.load(ScopeBinding(self.thread_id, "default", "default"))
        return list(snap.messages)

    async def thread_state(self) -> dict[Any, Any]:
        from awaken_runtime import ScopeBinding

        snap = await self.store.load(ScopeBinding(self.thread_id, "default", "default"))
        return dict(snap.state)


def make_rig(
    main_turns: Sequence[Any] = ("ok",),
    compactor_turns: Sequence[Any] = ("SUMMARY",),
    *,
    config: dict[str, Any] | None = None,
    context_window: int | None = 4000,
    max_output_tokens: int | None = 500,
    store: ThreadStore | None = None,
    plugin: Any = None,
    model_name: str = "gpt-4o",
    instructions: str = "You are a helpful test agent.",
    tools: Sequence[Any] = (),
    extra_plugins: Sequence[Any] = (),
    plugin_ids: Sequence[str] = ("compact",),
    compactor_agent: str | None = "summarizer",
) -> Rig:
    main = ScriptedExecutor(list(main_turns), repeat=True)
    compactor = ScriptedExecutor(list(compactor_turns), repeat=True)
    store = store if store is not None else InMemoryStore()
    cfg: dict[str, Any] = {"keep_recent_messages": 4, "min_gain_tokens": 50}
    if compactor_agent is not None:
        cfg["compactor_agent"] = compactor_agent
    cfg.update(config or {})
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_store(store)
        .with_model(
            ModelSpec(
                id="main-model",
                provider="main",
                model=model_name,
                context_window=context_window,
                max_output_tokens=max_output_tokens,
            )
        )
        .with_model(ModelSpec(id="compactor-model", provider="compactor", model="summarizer-1"))
        .with_provider("main", main)
        .with_provider("compactor", compactor)
        .with_plugin(plugin if plugin is not None else CompactPlugin())
    )
    for extra in extra_plugins:
        builder.with_plugin(extra)
    for t in tools:
        builder.with_tool(t)
    builder.with_agent_spec(
        AgentConfig(
            id="main",
            model_binding="main-model",
            instructions=instructions,
            plugin_ids=list(plugin_ids),
            plugin_config={"compact": cfg},
            tool_ids=[t.descriptor.id for t in tools],
        )
    )
    builder.with_agent_spec(
        AgentConfig(id="summarizer", model_binding="compactor-model", instructions="Summarize.")
    )
    return Rig(builder.build(), main, compactor, store)


@pytest.fixture
def rig() -> Callable[..., Rig]:
    return make_rig


@pytest.fixture
def lookup_tool() -> Any:
    return lookup
