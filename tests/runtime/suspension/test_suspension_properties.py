"""No path resumes a call twice (issue #3): a hypothesis property test over random
sequences of decisions, duplicates, wrong-thread tickets and cancellations against a
run with 2-4 parked calls.

Asserted for every sequence: each parked call ends with exactly one tool result (the
one its decision implies), a tool body runs at most once per call id (exactly once
for approved calls), every rejected operation changes nothing (in either thread),
and once every call is decided (or the run is cancelled) the run no longer waits.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    Cancelled,
    CapabilityBound,
    Contributions,
    Deny,
    InMemoryStore,
    ModelSpec,
    NaturalEnd,
    Phase,
    PluginManifest,
    Respond,
    ResumeRejected,
    ResumeTicket,
    Runtime,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    ToolCall,
    ToolCallContext,
    tool,
)

AGENT = "agent"
THREAD = "t-prop"
OTHER = "t-other"


class _Gate:
    manifest = PluginManifest(id="gate", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Contributions:
        def gate(ctx: Any, call: ToolCall) -> Any:
            if call.name == "work":
                return Suspend(
                    await_reason=AwaitReason.TOOL_PERMISSION, payload={"n": call.arguments["n"]}
                )
            return None

        return Contributions(tool_gates=[gate])


@dataclass
class World:
    runtime: Runtime
    store: InMemoryStore
    n: int
    executed: list[tuple[str, str]] = field(default_factory=list)
    """``(thread id, call id)`` of every ``work`` body that ran."""


def build_world(n: int) -> World:
    store = InMemoryStore()
    executed: list[tuple[str, str]] = []

    async def work(n: int, ctx: ToolCallContext) -> str:
        """Do the work."""
        executed.append((ctx.thread_id, ctx.call_id))
        return f"worked {n}"

    calls = [ToolCall(id=f"c{i}", name="work", arguments={"n": i}) for i in range(n)]

    def turn(request: Any) -> ScriptedTurn:
        if request.messages and request.messages[-1].role == "tool":
            return ScriptedTurn(text="done")
        return ScriptedTurn(tool_calls=calls)

    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="scripted", model="scripted-1"))
        .with_provider("scripted", ScriptedExecutor([turn], repeat=True))
        .with_plugin(_Gate())
        .with_tool(tool(work))
        .with_store(store)
        .with_agent_spec(
            AgentConfig(id=AGENT, model_binding="m", tool_ids=["work"], plugin_ids=["gate"])
        )
        .build()
    )
    return World(runtime, store, n, executed)


async def snap(world: World, thread_id: str) -> Any:
    loaded = await world.store.load(ScopeBinding(thread_id, "default", "default"))
    return (
        [m.model_dump(mode="json") for m in loaded.messages],
        loaded.version,
        loaded.parked.model_dump(mode="json") if loaded.parked else None,
        len(world.store.batches(thread_id)),
        [cid for thread, cid in world.executed if thread == thread_id],
    )


def decision(kind: str, cid: str) -> Any:
    if kind == "approve":
        return Approve()
    if kind == "deny":
        return Deny(reason=f"no to {cid}")
    return Respond(value=f"answer for {cid}")


def expected_result(kind: str, cid: str) -> str:
    n = cid[1:]
    return {
        "approve": f"worked {n}",
        "deny": f"no to {cid}",
        "respond": f"answer for {cid}",
        "cancel": "cancelled",
    }[kind]


KINDS = st.sampled_from(["approve", "deny", "respond"])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("resume"), st.integers(0, 3), KINDS),
        st.tuples(st.just("resume_many"), st.integers(1, 4), KINDS),
        st.tuples(st.just("duplicate"), st.integers(0, 3), KINDS),
        st.tuples(st.just("duplicate_in_one_resume"), st.integers(0, 3), KINDS),
        st.tuples(st.just("wrong_thread"), st.integers(0, 3), KINDS),
        st.tuples(st.just("cancel"), st.just(0), KINDS),
    ),
    max_size=10,
)


async def scenario(n: int, ops: list[tuple[str, int, str]]) -> None:
    world = build_world(n)
    rt = world.runtime
    state = await rt.run(AGENT, "go", thread_id=THREAD)
    other = await rt.run(AGENT, "go", thread_id=OTHER)
    assert state.phase is Phase.WAITING and other.phase is Phase.WAITING
    tickets: dict[str, ResumeTicket] = {t.call.id: t for t in state.tickets}
    assert sorted(tickets) == sorted(f"c{i}" for i in range(n))
    assert len({t.ticket_id for t in state.tickets}) == n
    other_before = await snap(world, OTHER)
    assert world.executed == []

    pending = [t.call.id for t in state.tickets]
    used: list[ResumeTicket] = []
    outcome: dict[str, str] = {}
    ended = False

    async def rejected(attempt: Any) -> None:
        before = await snap(world, THREAD)
        with pytest.raises(ResumeRejected):
            await attempt
        assert await snap(world, THREAD) == before

    for op, index, kind in ops:
        if op == "resume":
            if pending:
                cid = pending[index % len(pending)]
                result = await rt.resume(tickets[cid], decision(kind, cid))
                pending.remove(cid)
                used.append(tickets[cid])
                outcome[cid] = kind
                assert result.phase is (Phase.WAITING if pending else Phase.ENDED)
                assert sorted(t.call.id for t in result.tickets) == sorted(pending)
                ended = not pending
            else:
                cid = sorted(tickets)[index % n]
                await rejected(rt.resume(tickets[cid], decision(kind, cid)))
        elif op == "resume_many":
            chosen = pending[:index]
            if chosen:
                result = await rt.resume_many(
                    [(tickets[c], decision(kind, c)) for c in reversed(chosen)]
                )
                for cid in chosen:
                    pending.remove(cid)
                    used.append(tickets[cid])
                    outcome[cid] = kind
                assert result.phase is (Phase.WAITING if pending else Phase.ENDED)
                ended = not pending
        elif op == "duplicate":
            if used:
                again = used[index % len(used)]
                await rejected(rt.resume(again.model_dump_json(), decision(kind, again.call.id)))
        elif op == "duplicate_in_one_resume":
            if pending:
                cid = pending[index % len(pending)]
                t = tickets[cid]
                await rejected(rt.resume_many([(t, decision(kind, cid)), (t, Approve())]))
        elif op == "wrong_thread":
            cid = sorted(tickets)[index % n]
            forged = tickets[cid].model_copy(update={"thread_id": OTHER})
            await rejected(rt.resume(forged, decision(kind, cid)))
        elif op == "cancel":
            if ended:
                await rejected(rt.cancel_waiting(THREAD))
            else:
                result = await rt.cancel_waiting(THREAD)
                assert isinstance(result.end_cause, Cancelled)
                for cid in pending:
                    outcome[cid] = "cancel"
                pending.clear()
                ended = True
        # The other thread's waiting run is never touched.
        assert await snap(world, OTHER) == other_before

    if not ended:
        result = await rt.resume_many([(tickets[c], decision("respond", c)) for c in pending])
        assert result.phase is Phase.ENDED and isinstance(result.end_cause, NaturalEnd)
        for cid in pending:
            outcome[cid] = "respond"

    # Every parked call ended exactly once, with the result its decision implies.
    loaded = await world.store.load(ScopeBinding(THREAD, "default", "default"))
    assert loaded.parked is None
    results: dict[str, list[Any]] = {}
    for m in loaded.messages:
        if m.role == "tool":
            results.setdefault(m.tool_call_id or "", []).append(m)
    assert sorted(results) == sorted(tickets)
    for cid, found in results.items():
        assert len(found) == 1, (cid, [m.text for m in found])
        assert expected_result(outcome[cid], cid) in found[0].text
        is_error = bool(found[0].metadata.get("is_error"))
        assert is_error is (outcome[cid] in ("deny", "cancel")), (cid, found[0])
    # Each tool body ran at most once per call id, and only for approved calls.
    mine = [cid for thread, cid in world.executed if thread == THREAD]
    assert len(mine) == len(set(mine))
    assert sorted(mine) == sorted(c for c, k in outcome.items() if k == "approve")
    assert all(thread == THREAD for thread, _ in world.executed)
    records = [r for r in world.store.runs.values() if r.thread_id == THREAD]
    assert [r.phase for r in records] == [Phase.ENDED]


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(n=st.integers(2, 4), ops=OPS)
def test_no_parked_call_ends_more_than_once(n: int, ops: list[tuple[str, int, str]]) -> None:
    asyncio.run(scenario(n, ops))
