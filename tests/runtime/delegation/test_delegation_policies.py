"""Issue 28: child usage rolls up exactly once across suspend/resume; delegation is bounded."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CapabilityBound,
    Contributions,
    InMemoryStore,
    ModelSpec,
    Phase,
    PhaseContext,
    PluginManifest,
    Pricing,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    TokenUsage,
    ToolCall,
    tool,
)

PRICE = Pricing(input_per_mtok=1_000_000.0, output_per_mtok=0.0)  # $1 per prompt token


def usage(n: int) -> TokenUsage:
    return TokenUsage(prompt_tokens=n, completion_tokens=1)


def ask(agent_id: str, n: int, call_id: str = "d0") -> ScriptedTurn:
    """A turn calling agent_run once, using ``n`` prompt tokens."""
    call = ToolCall(id=call_id, name="agent_run", arguments={"agent_id": agent_id, "prompt": "go"})
    return ScriptedTurn(tool_calls=[call], usage=usage(n))


def say(text: str, n: int) -> ScriptedTurn:
    return ScriptedTurn(text=text, usage=usage(n))


@tool
def wire_money(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


def guard() -> Any:
    class Guard:
        manifest = PluginManifest(id="guard", bound=CapabilityBound(tool_gates=True))

        def resolve(self, config: Any) -> Contributions:
            def gate(ctx: PhaseContext, call: ToolCall) -> Any:
                if call.name == "wire_money" and ctx.decision is None:
                    return Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={})
                return None

            return Contributions(tool_gates=[gate], inherit=True)

    return Guard()


def build(
    scripts: dict[str, list[Any]],
    delegates: dict[str, list[str]],
    *,
    store: InMemoryStore | None = None,
    **builder_options: Any,
) -> Runtime:
    builder = AgentRuntimeBuilder(discover=False).with_store(store or InMemoryStore())
    builder.with_tool(wire_money)
    for agent_id, turns in scripts.items():
        spec = ModelSpec(id=f"m-{agent_id}", provider=f"p-{agent_id}", model="s", pricing=PRICE)
        builder.with_model(spec)
        builder.with_provider(f"p-{agent_id}", ScriptedExecutor(turns))
        builder.with_agent_spec(
            AgentConfig(
                id=agent_id,
                model_binding=f"m-{agent_id}",
                tool_ids=["wire_money"],
                delegates=delegates.get(agent_id, []),
                plugin_ids=["guard"],
                **builder_options,
            )
        )
    builder.with_plugin(guard())
    return builder.build()


# -- 7: usage counted once -------------------------------------------------------------


async def test_a_suspended_and_resumed_childs_usage_counts_once() -> None:
    rt = build(
        {
            "parent": [ask("banker", 1000), say("Rent handled.", 2000)],
            "banker": [ScriptedTurn(tool_calls=[wire()], usage=usage(30)), say("Paid.", 400)],
        },
        {"parent": ["banker"]},
    )
    parked = await rt.run("parent", "q", thread_id="t")
    assert parked.phase is Phase.WAITING
    assert parked.usage.prompt_tokens == 1030
    state = await rt.resume(parked.ticket.model_dump(mode="json"), Approve())
    assert state.phase is Phase.ENDED and state.final_text == "Rent handled."
    assert state.usage.prompt_tokens == 1000 + 2000 + 30 + 400
    assert state.usage.completion_tokens == 4
    assert state.cost == pytest.approx(1000 + 2000 + 30 + 400)


async def test_nested_children_suspended_and_resumed_count_once() -> None:
    rt = build(
        {
            "parent": [ask("mid", 1000), say("All done.", 2000)],
            "mid": [ask("banker", 100), say("Banker done.", 200)],
            "banker": [ScriptedTurn(tool_calls=[wire()], usage=usage(10)), say("Paid.", 20)],
        },
        {"parent": ["mid"], "mid": ["banker"]},
    )
    parked = await rt.run("parent", "q", thread_id="t")
    assert parked.phase is Phase.WAITING
    assert parked.usage.prompt_tokens == 1110
    state = await rt.resume(parked.ticket.model_dump(mode="json"), Approve())
    assert state.final_text == "All done."
    assert state.usage.prompt_tokens == 1000 + 2000 + 100 + 200 + 10 + 20
    assert state.usage.completion_tokens == 6
    assert state.cost == pytest.approx(3330)


def wire() -> ToolCall:
    return ToolCall(id="w0", name="wire_money", arguments={"amount": 900})
