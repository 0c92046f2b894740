"""Units: config validation, window start detection, chunked summaries, rendering."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from awaken_ext_compact import CompactConfig, render_message, usable_input
from awaken_ext_compact._plan import window_start
from awaken_runtime import (
    AgentConfigError,
    InferenceParams,
    InferenceRequest,
    KeepLast,
    Message,
    MessageView,
    ModelSpec,
    Scope,
    ToolCall,
)


def test_config_defaults_and_bad_config(rig: Callable[..., Any]) -> None:
    config = CompactConfig()
    assert config.trigger_ratio == 0.8 and config.trigger_messages == 200
    assert config.keep_recent_messages == 10 and config.min_gain_tokens == 1000
    assert config.compactor_agent is None and config.allow_download is False
    r = rig(config={"trigger_ratio": 1.5})
    with pytest.raises(AgentConfigError) as info:
        r.runtime.resolve("main")
    assert "compact" in str(info.value) and "trigger_ratio" in str(info.value)
    r = rig(config={"no_such_option": 1})
    with pytest.raises(AgentConfigError):
        r.runtime.resolve("main")


def test_window_start_with_and_without_a_system_prompt() -> None:
    items = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    view = MessageView(items, 0, 3)
    system = Message.system("sys")
    assert window_start([system, *items], view) == (0, system)
    assert window_start(items[1:], view) == (1, None)
    assert window_start([system, *items[2:]], view) == (2, system)
    assert window_start([], view) == (3, None)


def test_usable_input() -> None:
    spec = ModelSpec(id="m", provider="p", model="x", context_window=1000, max_output_tokens=100)
    request = InferenceRequest(model=spec, messages=[], tools=[])
    assert usable_input(request, CompactConfig()) == 900
    request.params = InferenceParams(max_output_tokens=300)
    assert usable_input(request, CompactConfig()) == 700
    assert usable_input(request, CompactConfig(context_window=2000)) == 1700
    request.model = spec.model_copy(update={"context_window": None})
    assert usable_input(request, CompactConfig()) is None


def test_render_message() -> None:
    call = ToolCall(id="c1", name="lookup", arguments={"q": "x"})
    assert render_message(Message.user("hi")) == "[user] hi"
    assert render_message(Message.assistant(None, [call])) == (
        '[assistant]\n[assistant calls lookup] {"q": "x"}'
    )
    assert render_message(Message.tool("c1", "42", name="lookup")) == "[tool result lookup] 42"


async def test_large_span_is_summarized_in_chunks(rig: Callable[..., Any]) -> None:
    seen: list[str] = []

    def summarize(request: InferenceRequest) -> str:
        seen.append(request.messages[-1].text)
        return f"S{len(seen)}"

    r = rig(
        ["ok " * 100],
        compactor_turns=[summarize],
        config={"max_compactor_input_tokens": 400},
        context_window=3000,
    )
    for i in range(40):
        await r.run(f"question {i} " + "words " * 100)
        if r.compactor.calls:
            break
    assert len(seen) >= 3  # one compaction, several chunks
    assert "<previous_summary>\n(none)" in seen[0]
    for k in range(1, len(seen)):
        assert f"<previous_summary>\nS{k}\n</previous_summary>" in seen[k]
    summary = (await r.thread_state())[(Scope.THREAD, "compact.summary")]
    assert summary["text"] == f"S{len(seen)}" and summary["compactions"] == 1


async def test_works_with_a_keep_last_policy(rig: Callable[..., Any]) -> None:
    r = rig(["ok " * 100], context_window=None, config={"trigger_messages": 8})
    agent = r.runtime.registries.agents["main"]
    r.runtime.registries.agents["main"] = agent.model_copy(
        update={"context_policy": KeepLast(keep_last=6)}
    )
    for i in range(12):
        state = await r.run(f"question {i}")
        assert state.end_cause is not None and state.end_cause.kind == "natural_end"
    # The policy keeps the request at 6 messages: never more than trigger_messages.
    assert r.compactor.calls == 0


def test_readme_agent_file_is_valid(tmp_path: Any) -> None:
    import re
    import tomllib
    from pathlib import Path

    from awaken_ext_compact import CompactPlugin
    from awaken_runtime import AgentConfig, AgentRuntimeBuilder, ScriptedExecutor

    readme = Path(__file__).resolve().parents[2] / "packages/awaken-ext-compact/README.md"
    block = re.search(r"```toml\n(# agent.toml\n.*?)```", readme.read_text(), re.S)
    assert block is not None
    path = tmp_path / "agent.toml"
    path.write_text(block.group(1))
    config = AgentConfig.from_file(path)
    (model,) = tomllib.loads(block.group(1))["models"]
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(**{**model, "provider": "scripted"}))
        .with_provider("scripted", ScriptedExecutor(["hi"]))
        .with_plugin(CompactPlugin())
        .with_agent_spec(config)
        .with_agent_spec(AgentConfig(id="summarizer", model_binding="gpt-4o"))
        .build()
    )
    snapshot = runtime.resolve("assistant")
    (plugin,) = snapshot.plugins
    assert plugin.config["keep_recent_messages"] == 12


async def test_builtin_summarizer_prefers_child_runner_infer() -> None:
    """With a core ChildRunner that has ``infer``, the built-in path uses it (stub runner)."""
    from awaken_ext_compact import TokenCounter, load_encoding
    from awaken_ext_compact._compactor import summarize
    from awaken_runtime import InferenceResponse, PhaseContext, PhaseHookPoint, RunInfo, Store

    class Runner:
        def __init__(self) -> None:
            self.requests: list[InferenceRequest] = []

        async def infer(self, request: InferenceRequest) -> InferenceResponse:
            self.requests.append(request)
            return InferenceResponse(text="  via infer  ")

    runner = Runner()
    spec = ModelSpec(id="m", provider="p", model="gpt-4o")
    ctx = PhaseContext(
        point=PhaseHookPoint.BEFORE_INFERENCE,
        store=Store({}),
        run=RunInfo("r", "t", "a", "default", "default", 1),
        messages=MessageView([], 0, 0),
        request=InferenceRequest(model=spec, messages=[], tools=[]),
        children=runner,  # type: ignore[arg-type]
    )
    counter = TokenCounter(load_encoding("o200k_base"))
    result = await summarize(ctx, CompactConfig(), counter, "old", [Message.user("new stuff")])
    assert result.text == "via infer" and result.calls == 1
    (request,) = runner.requests
    assert request.tools == [] and request.model is spec
    assert "<previous_summary>\nold\n</previous_summary>" in request.messages[1].text
    assert "[user] new stuff" in request.messages[1].text
