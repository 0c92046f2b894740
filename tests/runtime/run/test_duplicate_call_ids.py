"""Duplicate tool-call ids from a provider (issue 16, item 5).

Some servers send the same id for every call, or restart their numbering each
response. Inside the runtime every call gets a unique id, so results, tickets,
events and the transcript never pair two results with one call; the provider's
id stays in the assistant message's metadata and goes out again in the request.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from awaken_runtime import (
    Approve,
    AwaitReason,
    CapabilityBound,
    Contributions,
    Deny,
    Message,
    Phase,
    PluginManifest,
    ScopeBinding,
    ScriptedTurn,
    Suspend,
    ToolCall,
    ToolCallContext,
    ToolCallDone,
    to_openai,
)

PROVIDER_IDS = "provider_call_ids"


def same_id_turn(ident: str, *amounts: int) -> ScriptedTurn:
    """One response whose calls all carry ``ident`` (what some servers send)."""
    return ScriptedTurn(
        tool_calls=[ToolCall(id=ident, name="pay", arguments={"amount": a}) for a in amounts]
    )


def paying_tool(executed: list[tuple[str, int]]) -> Any:
    async def pay(amount: int, ctx: ToolCallContext) -> str:
        """Pay an amount."""
        executed.append((ctx.call_id, amount))
        return f"paid {amount}"

    return pay


def assert_paired_once(messages: list[Message]) -> dict[str, str]:
    """Every call id is unique and answered by exactly one result; ``id -> result``."""
    calls = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls or []]
    assert len(calls) == len(set(calls)), f"duplicate call ids in the transcript: {calls}"
    answers = Counter(m.tool_call_id for m in messages if m.role == "tool")
    assert answers == Counter(calls), (answers, calls)
    return {m.tool_call_id or "": m.text for m in messages if m.role == "tool"}


async def test_one_id_for_every_call_gives_each_call_its_own_id_and_result(
    make_runtime: Any,
) -> None:
    executed: list[tuple[str, int]] = []
    rig = make_runtime(
        [same_id_turn("call_0", 1, 2, 3), same_id_turn("call_0", 4), "done"],
        tools=[paying_tool(executed)],
    )
    events = await rig.events("pay", thread_id="t")
    messages = rig.messages("t")
    results = assert_paired_once(messages)
    # Each call ran once with its own arguments, under the id the transcript has.
    assert sorted(a for _, a in executed) == [1, 2, 3, 4]
    assert {cid: f"paid {a}" for cid, a in executed} == results
    # The events pair the same ids.
    done = {e.call_id: e.output for e in events if isinstance(e, ToolCallDone)}
    assert done == results
    # The provider's id is kept for every call that was renamed.
    first, second = (m for m in messages if m.role == "assistant" and m.tool_calls)
    ids = [c.id for c in first.tool_calls or []]
    assert ids[0] == "call_0"  # the first use of an id is kept as is
    assert first.metadata[PROVIDER_IDS] == {ids[1]: "call_0", ids[2]: "call_0"}
    (repeat,) = second.tool_calls or []
    assert repeat.id != "call_0"  # used in an earlier response of the thread
    assert second.metadata[PROVIDER_IDS] == {repeat.id: "call_0"}


async def test_the_model_sees_results_in_order_under_the_providers_ids(make_runtime: Any) -> None:
    executed: list[tuple[str, int]] = []
    rig = make_runtime(
        [same_id_turn("x", 5, 6), "done"], tools=[paying_tool(executed)], chunk_size=0
    )
    await rig.run("pay", thread_id="t")
    # The second request, converted as the LiteLLM provider sends it.
    sent = to_openai(rig.executor.requests[1].messages)
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert [c["id"] for c in assistant["tool_calls"]] == ["x", "x"]
    tools = [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"]
    assert tools == [("x", "paid 5"), ("x", "paid 6")]


async def test_a_later_run_on_the_thread_reusing_an_id_gets_a_fresh_one(make_runtime: Any) -> None:
    executed: list[tuple[str, int]] = []
    rig = make_runtime(
        [same_id_turn("call_1", 1), "done", same_id_turn("call_1", 2), "done"],
        tools=[paying_tool(executed)],
    )
    await rig.run("one", thread_id="t")
    await rig.run("two", thread_id="t")
    results = assert_paired_once(rig.messages("t"))
    assert sorted(results.values()) == ["paid 1", "paid 2"]
    assert len({cid for cid, _ in executed}) == 2


class ParkEveryPay:
    manifest = PluginManifest(id="park", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Contributions:
        def gate(ctx: Any, call: ToolCall) -> Any:
            return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)

        return Contributions(tool_gates=[gate])


async def test_parked_calls_sharing_an_id_get_distinct_tickets_and_results(
    make_runtime: Any,
) -> None:
    executed: list[tuple[str, int]] = []
    rig = make_runtime(
        [same_id_turn("dup", 10, 20, 30), "done"],
        tools=[paying_tool(executed)],
        plugins=[ParkEveryPay()],
    )
    state = await rig.run("pay", thread_id="t")
    assert state.phase is Phase.WAITING
    call_ids = [t.call.id for t in state.tickets]
    assert len(set(call_ids)) == 3
    by_amount = {t.call.arguments["amount"]: t for t in state.tickets}
    state = await rig.runtime.resume(by_amount[20], Deny(reason="no"))
    assert state.phase is Phase.WAITING
    state = await rig.runtime.resume_many([(by_amount[10], Approve()), (by_amount[30], Approve())])
    assert state.phase is Phase.ENDED
    assert sorted(executed) == sorted([(by_amount[10].call.id, 10), (by_amount[30].call.id, 30)])
    results = assert_paired_once(rig.messages("t"))
    assert results[by_amount[10].call.id] == "paid 10"
    assert results[by_amount[30].call.id] == "paid 30"
    assert "denied" in results[by_amount[20].call.id]


async def test_empty_provider_ids_get_fresh_ids_and_no_mapping(make_runtime: Any) -> None:
    executed: list[tuple[str, int]] = []
    rig = make_runtime([same_id_turn("", 1, 2), "done"], tools=[paying_tool(executed)])
    await rig.run("pay", thread_id="t")
    messages = rig.messages("t")
    assert_paired_once(messages)
    assistant = next(m for m in messages if m.tool_calls)
    assert all(c.id for c in assistant.tool_calls or [])
    assert PROVIDER_IDS not in assistant.metadata


@pytest.mark.parametrize("backend", ["memory", "sqlite", "unindexed"])
async def test_a_new_runtime_on_the_store_sees_the_threads_ids(
    make_runtime: Any, tmp_path: Any, backend: str
) -> None:
    """Ids from earlier runs count whether the store gives them (memory, SQLite) or not."""
    from awaken_runtime.stores import InMemoryStore, SQLiteStore

    class Unindexed(InMemoryStore):
        """A store whose snapshots carry no call ids: the run scans the thread."""

        async def load(self, binding: ScopeBinding) -> Any:
            return dataclasses.replace(await super().load(binding), call_ids=None)

    store: Any = {"memory": InMemoryStore, "unindexed": Unindexed}.get(backend)
    store = store() if store is not None else SQLiteStore(tmp_path / "t.db")
    executed: list[tuple[str, int]] = []
    first = make_runtime(
        [same_id_turn("call_1", 1), "done"], tools=[paying_tool(executed)], store=store
    )
    await first.run("one", thread_id="t")
    snapshot = await store.load(ScopeBinding("t", "default", "default"))
    assert snapshot.call_ids == (None if backend == "unindexed" else {"call_1"})
    second = make_runtime(
        [same_id_turn("call_1", 2), "done"], tools=[paying_tool(executed)], store=store
    )
    await second.run("two", thread_id="t")
    messages = (await store.load(ScopeBinding("t", "default", "default"))).messages
    results = assert_paired_once(messages)
    assert sorted(results.values()) == ["paid 1", "paid 2"]
    assert len({cid for cid, _ in executed}) == 2
