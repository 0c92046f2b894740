"""200-turn conversations with tool calls stay under the window on every request.

Both tests need the core to honour the request window (``awaken.request_window``).
The litellm one runs the main model through ``LiteLLMExecutor`` against the
local OpenAI-compatible test server and counts what the server received.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from awaken_ext_compact import SUMMARY, CompactPlugin, core_supports_request_window
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    InferenceRequest,
    LlmExecutor,
    Message,
    ModelSpec,
    Runtime,
    Scope,
    ScriptedExecutor,
    ScriptedTurn,
    ToolCall,
)

pytestmark = pytest.mark.skipif(
    not core_supports_request_window(),
    reason="the core does not honour awaken.request_window yet",
)

TURNS = 200
WINDOW = 6000
MAX_OUT = 500
USABLE = WINDOW - MAX_OUT
CONFIG = {"compactor_agent": "summarizer", "keep_recent_messages": 6, "min_gain_tokens": 200}


def user_text(i: int) -> str:
    return f"turn {i}: please check item {i} and report. " + "Context sentence here. " * (i % 7 * 4)


def answer_text(i: int) -> str:
    return f"Item {i} is fine. " + "Explanation follows in some detail. " * (i % 5 * 5)


def summary_turn(request: InferenceRequest) -> str:
    prompt = request.messages[-1].text
    return "Summary: " + " ".join(f"t{i}" for i in range(TURNS) if f"turn {i}:" in prompt)[:1500]


def no_orphans(messages: Sequence[Message]) -> bool:
    seen: set[str] = set()
    for m in messages:
        seen.update(c.id for c in m.tool_calls or ())
        if m.role == "tool" and m.tool_call_id not in seen:
            return False
    return True


def main_turn(request: InferenceRequest) -> ScriptedTurn:
    messages = list(request.messages)
    user = max(i for i, m in enumerate(messages) if m.role == "user")
    i = int(messages[user].text.split(":")[0].split()[1])
    if i % 2 == 0 and not any(m.role == "tool" for m in messages[user:]):
        return ScriptedTurn(
            tool_calls=[ToolCall(id=f"call_{i}", name="lookup", arguments={"query": f"item {i}"})]
        )
    return ScriptedTurn(text=answer_text(i))


def compacting_runtime(
    main_spec: ModelSpec, main: LlmExecutor, compactor: ScriptedExecutor, lookup_tool: Any
) -> Runtime:
    """The agent "main" on ``main_spec`` with compaction, summarizing through ``compactor``."""
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(main_spec)
        .with_model(ModelSpec(id="c", provider="comp", model="summarizer"))
        .with_provider(main_spec.provider, main)
        .with_provider("comp", compactor)
        .with_tool(lookup_tool)
        .with_plugin(CompactPlugin())
        .with_agent_spec(
            AgentConfig(
                id="main",
                model_binding="m",
                instructions="Be brief.",
                tool_ids=["lookup"],
                plugin_ids=["compact"],
                plugin_config={"compact": CONFIG},
            )
        )
        .with_agent_spec(AgentConfig(id="summarizer", model_binding="c"))
        .build()
    )


async def test_200_turns_scripted_stay_under_the_window(
    ref_count: Callable[..., int], lookup_tool: Any
) -> None:
    main = ScriptedExecutor([main_turn], repeat=True)
    compactor = ScriptedExecutor([summary_turn], repeat=True)
    main_spec = ModelSpec(
        id="m", provider="main", model="gpt-4o", context_window=WINDOW, max_output_tokens=MAX_OUT
    )
    runtime = compacting_runtime(main_spec, main, compactor, lookup_tool)
    peak = 0
    for i in range(TURNS):
        first = len(main.requests)
        state = await runtime.run("main", user_text(i), thread_id="long")
        assert state.end_cause is not None and state.end_cause.kind == "natural_end"
        for request in main.requests[first:]:
            tokens = ref_count(list(request.messages), list(request.tools))
            peak = max(peak, tokens)
            assert tokens <= USABLE, f"turn {i}: {tokens} tokens"
            carried = [m for m in request.messages if "context_key" not in m.metadata]
            assert no_orphans(carried)
            assert any(m.role == "user" and m.text.startswith(f"turn {i}:") for m in carried)
    assert compactor.calls >= 5
    assert peak > 0.5 * USABLE
    assert (Scope.THREAD, SUMMARY.key) in state.state


# -- through litellm and the local OpenAI-compatible server ----------------------

_PROVIDERS = Path(__file__).resolve().parents[1] / "runtime" / "models" / "litellm"


def _server_module() -> Any:
    if not (_PROVIDERS / "openai_server.py").exists():
        pytest.skip("tests/runtime/models/litellm/openai_server.py is not available")
    pytest.importorskip("litellm")
    if str(_PROVIDERS) not in sys.path:
        sys.path.insert(0, str(_PROVIDERS))
    import openai_server

    return openai_server


def _wire_count(enc: Any, body: dict[str, Any]) -> int:
    """Cookbook count of a chat-completions body as the server received it."""
    total = 3
    for m in body["messages"]:
        total += 3
        for key in ("role", "content", "name", "tool_call_id"):
            value = m.get(key)
            if isinstance(value, str):
                total += len(enc.encode(value, disallowed_special=()))
                total += 1 if key == "name" else 0
        for call in m.get("tool_calls") or ():
            fn = call["function"]
            total += 3 + sum(len(enc.encode(v)) for v in (call["id"], fn["name"], fn["arguments"]))
    for spec in body.get("tools") or ():
        text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        total += len(enc.encode(text))
    return total


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
async def test_200_turns_through_litellm_stay_under_the_window(
    reference_encoding: Callable[[str], Any], lookup_tool: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = _server_module()
    from awaken_runtime import LiteLLMExecutor

    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    enc = reference_encoding("o200k_base")
    compactor = ScriptedExecutor([summary_turn], repeat=True)
    with srv.OpenAIServer() as server:
        for i in range(TURNS):
            if i % 2 == 0:
                call = srv.ToolCallSpec(f"call_{i}", "lookup", json.dumps({"query": f"item {i}"}))
                server.add(srv.Reply(tool_calls=[call], chunk_size=64))
            server.add(srv.Reply(text=answer_text(i), chunk_size=256))
        main_spec = ModelSpec(
            id="m",
            provider="litellm",
            model="openai/gpt-4o",
            api_base=server.base_url,
            context_window=WINDOW,
            max_output_tokens=MAX_OUT,
            timeout_s=10.0,
        )
        runtime = compacting_runtime(main_spec, LiteLLMExecutor(), compactor, lookup_tool)
        for i in range(TURNS):
            state = await runtime.run("main", user_text(i), thread_id="long")
            assert state.end_cause is not None and state.end_cause.kind == "natural_end", (
                i,
                state.end_cause,
            )
        bodies = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(bodies) == TURNS + TURNS // 2
    counts = [_wire_count(enc, body) for body in bodies]
    assert max(counts) <= USABLE, max(counts)
    assert compactor.calls >= 5
