"""Sub-agents: agent_run, run_child_agent, parallel batches, suspension that propagates."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    Block,
    CancellationToken,
    CapabilityBound,
    Contributions,
    Deny,
    InMemoryStore,
    ModelSpec,
    Phase,
    PhaseContext,
    PluginManifest,
    Runtime,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    TokenUsage,
    ToolCall,
    ToolCallContext,
    ToolError,
    ToolOutput,
    run_child_agent,
    tool,
)

USAGE = TokenUsage(prompt_tokens=100, completion_tokens=10)


def delegate(*calls: tuple[str, str], text: str = "") -> ScriptedTurn:
    """One parent turn calling agent_run once per (agent_id, prompt)."""
    return ScriptedTurn(
        text=text,
        usage=USAGE,
        tool_calls=[
            ToolCall(id=f"d{i}", name="agent_run", arguments={"agent_id": a, "prompt": p})
            for i, (a, p) in enumerate(calls)
        ],
    )


def build(
    scripts: dict[str, list[Any]],
    *,
    delegates: list[str] | None = None,
    tools: dict[str, list[Any]] | None = None,
    plugins: list[Any] = (),
    parent_plugins: list[str] = (),
    store: InMemoryStore | None = None,
    max_steps: dict[str, int] | None = None,
) -> Runtime:
    """Agents named by ``scripts`` keys, each on its own scripted model."""
    builder = AgentRuntimeBuilder(discover=False).with_store(store or InMemoryStore())
    seen_tools: set[str] = set()
    for agent_id, turns in scripts.items():
        builder.with_model(ModelSpec(id=f"m-{agent_id}", provider=f"p-{agent_id}", model="s"))
        builder.with_provider(f"p-{agent_id}", ScriptedExecutor(turns))
        agent_tools = (tools or {}).get(agent_id, [])
        for t in agent_tools:
            if t.descriptor.id not in seen_tools:
                builder.with_tool(t)
                seen_tools.add(t.descriptor.id)
        builder.with_agent_spec(
            AgentConfig(
                id=agent_id,
                model_binding=f"m-{agent_id}",
                tool_ids=[t.descriptor.id for t in agent_tools],
                delegates=(delegates or []) if agent_id == "parent" else [],
                plugin_ids=list(parent_plugins) if agent_id == "parent" else [],
                max_steps=(max_steps or {}).get(agent_id, 32),
            )
        )
    for plugin in plugins:
        builder.with_plugin(plugin)
    return builder.build()


def tool_results(state: Any) -> list[dict[str, Any]]:
    return [json.loads(m.text) for m in state.new_messages if m.role == "tool"]


async def test_declarative_delegation_returns_the_childs_answer() -> None:
    rt = build(
        {
            "parent": [delegate(("researcher", "find the answer")), "It is 42."],
            "researcher": [ScriptedTurn(text="The answer is 42.", usage=USAGE)],
        },
        delegates=["researcher"],
    )
    snapshot = rt.resolve("parent")
    schema = next(t for t in snapshot.tools if t.id == "agent_run").parameters
    assert schema["properties"]["agent_id"]["enum"] == ["researcher"]
    state = await rt.run("parent", "question", thread_id="t")
    assert tool_results(state) == [
        {"agent_id": "researcher", "status": "completed", "result": "The answer is 42."}
    ]
    assert state.final_text == "It is 42."
    # The child ran on its own thread, linked to the parent's.
    child = rt.store.messages("t/d0")
    assert [m.role for m in child] == ["user", "assistant"]
    assert child[0].text == "find the answer"


async def test_undeclared_agent_id_is_a_model_visible_error() -> None:
    rt = build(
        {"parent": [delegate(("intruder", "hi")), "ok"], "researcher": ["unused"]},
        delegates=["researcher"],
    )
    state = await rt.run("parent", "q")
    result = next(m for m in state.new_messages if m.role == "tool")
    assert result.metadata.get("is_error") is True
    assert "'intruder' is not one of the delegates (researcher)" in result.text
    assert state.end_cause.kind == "natural_end"


async def test_blank_prompt_is_rejected() -> None:
    rt = build(
        {"parent": [delegate(("researcher", "   ")), "ok"], "researcher": []},
        delegates=["researcher"],
    )
    state = await rt.run("parent", "q")
    result = next(m for m in state.new_messages if m.role == "tool")
    assert "non-blank" in result.text


async def test_child_failure_and_max_steps_are_model_visible() -> None:
    @tool
    def explode() -> str:
        """Fails hard."""
        raise ToolError("disk on fire")

    @tool
    def spin() -> str:
        """Loops."""
        return "again"

    rt = build(
        {
            "parent": [delegate(("breaker", "go"), ("looper", "go")), "handled"],
            "breaker": [ScriptedTurn.call("explode")],
            "looper": [ScriptedTurn.call("spin"), ScriptedTurn.call("spin")],
        },
        delegates=["breaker", "looper"],
        tools={"breaker": [explode], "looper": [spin]},
        max_steps={"looper": 2},
    )
    state = await rt.run("parent", "q")
    failed, capped = tool_results(state)
    assert failed["status"] == "failed" and "disk on fire" in failed["reason"]
    assert capped == {
        "agent_id": "looper",
        "status": "max_steps",
        "result": "",
        "reason": "reached max_steps=2",
    }
    assert state.end_cause.kind == "natural_end"


async def test_usage_rolls_up_into_the_parent() -> None:
    rt = build(
        {
            "parent": [delegate(("researcher", "x")), ScriptedTurn(text="done", usage=USAGE)],
            "researcher": [ScriptedTurn(text="y", usage=USAGE)],
        },
        delegates=["researcher"],
    )
    state = await rt.run("parent", "q")
    assert state.usage.prompt_tokens == 300  # two parent inferences + one child


async def test_child_events_reach_the_parent_stream_tagged_with_the_child_run() -> None:
    rt = build(
        {
            "parent": [delegate(("researcher", "x")), "done"],
            "researcher": ["child answer"],
        },
        delegates=["researcher"],
    )
    events = [e async for e in rt.stream("parent", "q", thread_id="t")]
    starts = [e for e in events if e.type == "run_start"]
    assert len(starts) == 2
    parent_start, child_start = starts
    assert child_start.parent_run_id == parent_start.run_id
    assert child_start.thread_id == "t/d0"
    child_events = [e for e in events if e.run_id == child_start.run_id]
    assert [e.type for e in child_events][-1] == "run_finish"
    assert events[-1].type == "run_finish" and events[-1].run_id == parent_start.run_id


async def test_programmatic_run_child_agent_in_a_custom_tool() -> None:
    @tool
    async def summarize(text: str, ctx: ToolCallContext) -> ToolOutput:
        """Summarize with the summarizer agent."""
        outcome = await run_child_agent(ctx, "summarizer", f"Summarize: {text}")
        return ToolOutput.ok(f"[{outcome.status}] {outcome.text.upper()}")

    rt = build(
        {
            "parent": [ScriptedTurn.call("summarize", {"text": "long text"}), "ok"],
            "summarizer": ["short"],
        },
        tools={"parent": [summarize]},
    )
    state = await rt.run("parent", "q")
    assert [m.text for m in state.new_messages if m.role == "tool"] == ["[completed] SHORT"]


async def test_cancelling_the_parent_cancels_the_child() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes long."""
        started.set()
        await asyncio.sleep(10)
        return "late"

    rt = build(
        {"parent": [delegate(("worker", "go")), "never"], "worker": [ScriptedTurn.call("slow")]},
        delegates=["worker"],
        tools={"worker": [slow]},
    )
    token = CancellationToken()
    task = asyncio.create_task(rt.run("parent", "q", thread_id="t", cancel=token))
    await asyncio.wait_for(started.wait(), 5)
    token.cancel()
    state = await asyncio.wait_for(task, 5)  # the child's 10 s sleep was interrupted
    assert state.end_cause.kind == "cancelled"
    child_runs = [r for r in rt.store.runs.values() if r.thread_id == "t/d0"]
    assert [r.end_cause.kind for r in child_runs] == ["cancelled"]


def permission_plugin(*, inherit: bool) -> Any:
    class Guard:
        manifest = PluginManifest(id="guard", bound=CapabilityBound(tool_gates=True))

        def resolve(self, config: Any) -> Contributions:
            def gate(ctx: PhaseContext, call: ToolCall) -> Any:
                if call.name == "wire_money":
                    return Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={})
                if call.name == "delete_all":
                    return Block(reason="delete_all is denied by policy")
                return None

            return Contributions(tool_gates=[gate], inherit=inherit)

    return Guard()


@tool
def wire_money(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


@tool
def delete_all() -> str:
    """Delete everything."""
    return "deleted"


async def test_policy_is_inherited_so_delegation_is_no_way_around_a_deny() -> None:
    rt = build(
        {
            "parent": [delegate(("worker", "clean up")), "ok"],
            "worker": [ScriptedTurn.call("delete_all"), "could not"],
        },
        delegates=["worker"],
        tools={"worker": [delete_all]},
        plugins=[permission_plugin(inherit=True)],
        parent_plugins=["guard"],
    )
    state = await rt.run("parent", "q", thread_id="t")
    child = rt.store.messages("t/d0")
    blocked = next(m for m in child if m.role == "tool")
    assert blocked.text == "delete_all is denied by policy"
    assert tool_results(state)[0]["result"] == "could not"


async def test_without_inherit_the_child_is_not_gated() -> None:
    rt = build(
        {
            "parent": [delegate(("worker", "clean up")), "ok"],
            "worker": [ScriptedTurn.call("delete_all"), "done"],
        },
        delegates=["worker"],
        tools={"worker": [delete_all]},
        plugins=[permission_plugin(inherit=False)],
        parent_plugins=["guard"],
    )
    await rt.run("parent", "q", thread_id="t")
    assert [m.text for m in rt.store.messages("t/d0") if m.role == "tool"] == ["deleted"]


def suspending_setup(store: InMemoryStore, *, second_process: bool = False) -> Runtime:
    parent: list[Any] = [delegate(("banker", "pay rent")), "Rent handled."]
    banker: list[Any] = [ScriptedTurn.call("wire_money", {"amount": 900}), "Paid 900."]
    if second_process:  # a new process's scripted models continue where the first stopped
        parent, banker = parent[1:], banker[1:]
    return build(
        {"parent": parent, "banker": banker},
        delegates=["banker"],
        tools={"banker": [wire_money]},
        plugins=[permission_plugin(inherit=True)],
        parent_plugins=["guard"],
        store=store,
    )


async def test_child_suspension_parks_the_parent_and_resumes_both() -> None:
    store = InMemoryStore()
    rt = suspending_setup(store)
    parked = await rt.run("parent", "q", thread_id="t")
    assert parked.phase is Phase.WAITING
    ticket = parked.ticket
    assert ticket.await_reason is AwaitReason.DELEGATION
    assert ticket.payload["child_thread_id"] == "t/d0"
    child_ticket = ticket.payload["child_ticket"]
    assert child_ticket["await_reason"] == "tool_permission"
    assert child_ticket["call"]["name"] == "wire_money"
    # A fresh runtime over the same store resumes through the parent's ticket.
    fresh = suspending_setup(store, second_process=True)
    state = await fresh.resume(ticket.model_dump(mode="json"), Approve())
    assert state.phase is Phase.ENDED and state.final_text == "Rent handled."
    assert tool_results(state) == [
        {"agent_id": "banker", "status": "completed", "result": "Paid 900."}
    ]
    assert [m.text for m in store.messages("t/d0") if m.role == "tool"] == ["sent 900"]


async def test_denied_child_call_reaches_the_child_model() -> None:
    store = InMemoryStore()
    rt = suspending_setup(store)
    parked = await rt.run("parent", "q", thread_id="t")
    state = await rt.resume(parked.ticket, Deny(reason="not this month"))
    child_tool = next(m for m in store.messages("t/d0") if m.role == "tool")
    assert "not this month" in child_tool.text
    assert state.end_cause.kind == "natural_end"


async def test_cancelling_a_parent_waiting_on_a_child_cancels_the_child() -> None:
    store = InMemoryStore()
    rt = suspending_setup(store)
    await rt.run("parent", "q", thread_id="t")
    state = await rt.cancel_waiting("t")
    assert state.end_cause.kind == "cancelled"
    child_runs = [r for r in store.runs.values() if r.thread_id == "t/d0"]
    assert child_runs[-1].end_cause.kind == "cancelled"
    # Neither thread is left parked: both accept new runs.
    for thread in ("t", "t/d0"):
        assert (await store.load(ScopeBinding(thread, "default", "default"))).parked is None
    again = await rt.run("parent", "new question", thread_id="t")
    assert again.final_text == "Rent handled."


async def test_parallel_delegations_finish_out_of_order_but_publish_in_model_order() -> None:
    delays = {"a": 0.3, "b": 0.2, "c": 0.1}
    finished: list[str] = []
    running = 0
    peak = 0

    def work_tool(name: str) -> Any:
        @tool(name=f"work_{name}")
        async def work() -> str:
            """Work."""
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(delays[name])
            running -= 1
            finished.append(name)
            return name

        return work

    rt = build(
        {
            "parent": [delegate(("a", "go"), ("b", "go"), ("c", "go")), "all done"],
            **{n: [ScriptedTurn.call(f"work_{n}"), f"{n} finished"] for n in delays},
        },
        delegates=list(delays),
        tools={n: [work_tool(n)] for n in delays},
    )
    state = await rt.run("parent", "q")
    assert peak == 3  # all three children were running at once
    assert finished == ["c", "b", "a"]
    assert [r["result"] for r in tool_results(state)] == ["a finished", "b finished", "c finished"]
    assert [m.tool_call_id for m in state.new_messages if m.role == "tool"] == ["d0", "d1", "d2"]


async def test_mixed_batch_runs_sequentially() -> None:
    order: list[str] = []

    @tool
    async def local() -> str:
        """A local tool."""
        order.append("local")
        return "local"

    @tool
    async def child_work() -> str:
        """Child work."""
        await asyncio.sleep(0.05)
        order.append("child")
        return "child"

    turn = ScriptedTurn(
        tool_calls=[
            ToolCall(id="d0", name="agent_run", arguments={"agent_id": "w", "prompt": "go"}),
            ToolCall(id="l0", name="local", arguments={}),
        ]
    )
    rt = build(
        {"parent": [turn, "ok"], "w": [ScriptedTurn.call("child_work"), "w done"]},
        delegates=["w"],
        tools={"parent": [local], "w": [child_work]},
    )
    await rt.run("parent", "q")
    assert order == ["child", "local"]  # the delegation finished before the local call began


def test_child_suspension_resumes_from_sqlite_in_a_new_process(tmp_path: Any) -> None:
    import subprocess
    import sys
    from pathlib import Path

    from awaken_runtime.stores import SQLiteStore

    helper = Path(__file__).parent / "procs" / "delegation_proc.py"
    db, ticket = tmp_path / "awaken.db", tmp_path / "ticket.json"

    def run(*args: Any) -> dict[str, Any]:
        out = tmp_path / f"{args[0]}.json"
        done = subprocess.run(
            [sys.executable, str(helper), args[0], str(db), str(out), *map(str, args[1:])],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(out.read_text())

    parked = run("park")
    assert parked["phase"] == "waiting"
    ticket.write_text(parked["ticket"])
    resumed = run("resume", ticket)
    assert resumed["phase"] == "ended" and resumed["final_text"] == "Rent handled."
    assert json.loads(resumed["results"][0])["status"] == "completed"
    store = SQLiteStore(db)
    child = asyncio.run(store.load(ScopeBinding("t/d0", "default", "default")))
    assert child.parked is None
    assert [m.text for m in child.messages if m.role == "tool"] == [
        f"sent 900 from pid {resumed['pid']}"
    ]
