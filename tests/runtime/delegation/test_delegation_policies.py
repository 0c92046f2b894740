"""Issue 28: child usage rolls up exactly once across suspend/resume; delegation is bounded."""

from __future__ import annotations

import json
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


# -- 8: delegation is bounded ------------------------------------------------------------


def self_delegating(depth_turns: int, *, limits: dict[str, int] | None = None) -> Runtime:
    """Agent ``a`` delegating to itself ``depth_turns`` times, then answering each level."""
    turns = [ask("a", 1, call_id=f"d{i}") for i in range(depth_turns)]
    turns += [say(f"level answer {i}", 1) for i in range(depth_turns)]
    builder = AgentRuntimeBuilder(discover=False).with_store(InMemoryStore())
    builder.with_model(ModelSpec(id="m", provider="p", model="s"))
    builder.with_provider("p", ScriptedExecutor(turns))
    builder.with_agent_spec(AgentConfig(id="a", model_binding="m", delegates=["a"]))
    if limits is not None:
        builder.with_delegation_limits(**limits)
    return builder.build()


def results(rt: Runtime) -> list[dict[str, Any]]:
    """Every agent_run result anywhere in the store, deepest thread first."""
    out = []
    for thread_id in sorted(rt.store.core.threads, key=len, reverse=True):
        for m in rt.store.messages(thread_id):
            if m.role == "tool":
                out.append(json.loads(m.text))
    return out


async def test_self_delegation_stops_at_the_default_depth_with_the_chain_named() -> None:
    rt = self_delegating(11)
    state = await rt.run("a", "q", thread_id="t")
    assert state.phase is Phase.ENDED and state.end_cause.kind == "natural_end"
    deepest = results(rt)[0]
    assert deepest["status"] == "refused"
    assert deepest["reason"].startswith(
        "delegation depth limit: " + " -> ".join(["a"] * 12) + " would be 11 levels deep"
    )
    assert "limit 10" in deepest["reason"]
    # The root and ten levels of children ran; the eleventh never started.
    assert len([r for r in rt.store.runs.values() if r.agent_id == "a"]) == 11


@pytest.mark.parametrize("depth", [1, 2, 3])
async def test_the_depth_limit_is_exact(depth: int) -> None:
    rt = self_delegating(depth + 1, limits={"max_depth": depth})
    await rt.run("a", "q", thread_id="t")
    assert len(rt.store.runs) == depth + 1
    statuses = [r["status"] for r in results(rt)]
    assert statuses == ["refused"] + ["completed"] * depth


async def test_total_descendants_are_bounded_across_the_tree() -> None:
    calls = [
        ToolCall(id=f"c{i}", name="agent_run", arguments={"agent_id": "w", "prompt": "x"})
        for i in range(5)
    ]
    builder = AgentRuntimeBuilder(discover=False).with_store(InMemoryStore())
    builder.with_model(ModelSpec(id="m", provider="p", model="s"))
    builder.with_model(ModelSpec(id="mw", provider="pw", model="s"))
    builder.with_provider("p", ScriptedExecutor([ScriptedTurn(tool_calls=calls), "done"]))
    builder.with_provider("pw", ScriptedExecutor(["ok"] * 5))
    builder.with_agent_spec(AgentConfig(id="root", model_binding="m", delegates=["w"]))
    builder.with_agent_spec(AgentConfig(id="w", model_binding="mw"))
    rt = builder.with_delegation_limits(max_descendants=3).build()
    state = await rt.run("root", "q", thread_id="t")
    out = [json.loads(m.text) for m in state.new_messages if m.role == "tool"]
    assert [r["status"] for r in out] == ["completed"] * 3 + ["refused"] * 2
    assert "already started 3 sub-agent runs, limit 3 (refused: root -> w)" in out[3]["reason"]


async def test_the_descendant_count_spans_levels_and_restarts_each_root_step() -> None:
    """Root step 1: a -> b -> c -> d needs 3 runs (limit 2: d refused); step 2 starts afresh."""
    builder = AgentRuntimeBuilder(discover=False).with_store(InMemoryStore())
    for agent_id, turns in {
        "a": [ask("b", 1), ask("b", 1, call_id="d1"), say("a done", 1)],
        "b": [ask("c", 1), say("b done", 1), say("b again", 1)],
        "c": [ask("d", 1), say("c done", 1)],
        "d": [say("d done", 1)],
    }.items():
        builder.with_model(ModelSpec(id=f"m-{agent_id}", provider=f"p-{agent_id}", model="s"))
        builder.with_provider(f"p-{agent_id}", ScriptedExecutor(turns))
        nxt = {"a": ["b"], "b": ["c"], "c": ["d"]}.get(agent_id, [])
        builder.with_agent_spec(
            AgentConfig(id=agent_id, model_binding=f"m-{agent_id}", delegates=nxt)
        )
    rt = builder.with_delegation_limits(max_descendants=2).build()
    state = await rt.run("a", "q", thread_id="t")
    assert state.final_text == "a done"
    refused = [r for r in results(rt) if r["status"] == "refused"]
    assert len(refused) == 1 and refused[0]["reason"].endswith("(refused: a -> b -> c -> d)")
    # Step 2's delegation to b ran although step 1 used the whole budget.
    assert [
        r["status"] for r in [json.loads(m.text) for m in state.new_messages if m.role == "tool"]
    ] == ["completed", "completed"]


def test_limits_below_one_are_rejected() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AgentRuntimeBuilder(discover=False).with_delegation_limits(max_depth=0).build()
