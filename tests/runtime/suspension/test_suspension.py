"""Suspension and resume (issue #3, SPEC 3.7): parking from a gate or a tool, tickets,
typed decisions, exact-match resume, deadlines, fingerprints, HMAC, resume from a new
Runtime, ``run_to_completion`` and the event stream across legs.

Every rejected resume is checked to change nothing: the thread's messages, version,
parked record, batches, run records, executed tools and inference count are compared
before and after.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CapabilityBound,
    Contributions,
    Deny,
    InMemoryStore,
    Message,
    ModelSpec,
    NaturalEnd,
    ParkedRun,
    Phase,
    PluginManifest,
    Replay,
    Respond,
    ResumeRejected,
    ResumeTicket,
    RunFinish,
    RunStart,
    Runtime,
    Schedule,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    SuspendCall,
    ThreadBusy,
    ToolCall,
    ToolCallContext,
    ToolCallDone,
    tool,
)

AGENT = "agent"
PROVIDER = "scripted"
THREAD = "t-main"
SECRET = b"ticket-secret-for-tests"
LIMIT = 10
"""The gate suspends ``dangerous`` calls with ``x >= LIMIT`` (plugin config ``limit``)."""


# -- the test agent ---------------------------------------------------------------------


class GateConfig(BaseModel):
    limit: int = LIMIT


class GatePlugin:
    """Suspends ``dangerous`` (x >= limit), ``wait_for`` and ``transfer``; schedules ``later``."""

    def __init__(self) -> None:
        self.manifest = PluginManifest(
            id="gate",
            version="1.0.0",
            config_model=GateConfig,
            bound=CapabilityBound(tool_gates=True),
        )

    def resolve(self, config: Any) -> Contributions:
        limit = config.limit if config is not None else LIMIT

        def gate(ctx: Any, call: ToolCall) -> Any:
            if call.name == "dangerous" and call.arguments.get("x", 0) >= limit:
                return Suspend(
                    await_reason=AwaitReason.TOOL_PERMISSION, payload={"x": call.arguments["x"]}
                )
            if call.name == "wait_for":
                reason = AwaitReason(call.arguments["reason"])
                return Suspend(await_reason=reason, payload={"why": reason.value})
            if call.name == "transfer":
                return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
            if call.name == "later":
                return Schedule(at=datetime.fromisoformat(call.arguments["at"]))
            return None

        return Contributions(tool_gates=[gate])


Executed = list[tuple[str, str, dict[str, Any]]]
"""``(call_id, tool name, arguments)`` for every tool body that ran to its end."""


def make_tools(executed: Executed, asked: list[str], *, description: str | None = None):
    """The agent's tools; each records its execution (``asked``: every ``ask`` attempt)."""

    async def dangerous(x: int, ctx: ToolCallContext) -> str:
        """Do something dangerous."""
        executed.append((ctx.call_id, "dangerous", {"x": x}))
        return f"did {x}"

    async def safe(x: int, ctx: ToolCallContext) -> str:
        """Do something harmless."""
        executed.append((ctx.call_id, "safe", {"x": x}))
        return f"safe {x}"

    async def ask(
        question: str,
        ctx: ToolCallContext,
        reason: str = "user_input",
        ttl: float | None = None,
    ) -> str:
        """Ask the user a question."""
        asked.append(ctx.call_id)
        deadline = None if ttl is None else datetime.now(UTC) + timedelta(seconds=ttl)
        raise SuspendCall(AwaitReason(reason), {"question": question}, deadline=deadline)

    async def wait_for(reason: str, ctx: ToolCallContext) -> str:
        """Wait for something."""
        executed.append((ctx.call_id, "wait_for", {"reason": reason}))
        return f"waited for {reason}"

    async def later(at: str, ctx: ToolCallContext) -> str:
        """Run at a given time."""
        executed.append((ctx.call_id, "later", {"at": at}))
        return "later ran"

    async def transfer(amount: int, ctx: ToolCallContext) -> str:
        """Move money (does I/O, so it yields to the event loop)."""
        executed.append((ctx.call_id, "transfer", {"amount": amount}))
        await asyncio.sleep(0.02)
        return f"moved {amount}"

    return [
        tool(description=description)(dangerous),
        tool(safe),
        tool(ask),
        tool(wait_for),
        tool(later),
        tool(transfer),
    ]


def summary(request: Any) -> ScriptedTurn:
    """A final answer listing every tool result the model sees, ``id=content``."""
    parts = [f"{m.tool_call_id}={m.text}" for m in request.messages if m.role == "tool"]
    return ScriptedTurn(text="results: " + " | ".join(parts))


def calls_turn(*calls: tuple[str, str, dict[str, Any]]) -> ScriptedTurn:
    return ScriptedTurn(
        tool_calls=[ToolCall(id=cid, name=name, arguments=args) for cid, name, args in calls]
    )


@dataclass
class Rig:
    runtime: Runtime
    store: Any
    executor: ScriptedExecutor
    executed: Executed = field(default_factory=list)
    asked: list[str] = field(default_factory=list)


def build(
    turns: Sequence[Any] = (),
    *,
    store: Any = None,
    executor: ScriptedExecutor | None = None,
    executed: Executed | None = None,
    asked: list[str] | None = None,
    secret: bytes | None = None,
    description: str | None = None,
    limit: int | None = None,
    model: str = "scripted-1",
    instructions: str = "You are a test agent.",
) -> Rig:
    """A discovery-free runtime with the gate plugin and the tools above."""
    executed = [] if executed is None else executed
    asked = [] if asked is None else asked
    store = InMemoryStore() if store is None else store
    executor = executor or ScriptedExecutor(list(turns))
    tools = make_tools(executed, asked, description=description)
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider=PROVIDER, model=model))
        .with_provider(PROVIDER, executor)
        .with_plugin(GatePlugin())
        .with_store(store)
    )
    for t in tools:
        builder.with_tool(t)
    builder.with_agent_spec(
        AgentConfig(
            id=AGENT,
            instructions=instructions,
            model_binding="m",
            tool_ids=[t.descriptor.id for t in tools],
            plugin_ids=["gate"],
            plugin_config={} if limit is None else {"gate": {"limit": limit}},
        )
    )
    if secret is not None:
        builder.with_ticket_secret(secret)
    return Rig(builder.build(), store, executor, executed, asked)


async def snapshot(rig: Rig, thread_id: str = THREAD) -> dict[str, Any]:
    """Everything a rejected resume must leave untouched."""
    snap = await rig.store.load(ScopeBinding(thread_id, "default", "default"))
    return {
        "messages": [m.model_dump(mode="json") for m in snap.messages],
        "version": snap.version,
        "parked": snap.parked.model_dump(mode="json") if snap.parked else None,
        "state": dict(snap.state),
        "batches": len(rig.store.batches(thread_id)),
        "runs": {k: v.model_dump(mode="json") for k, v in rig.store.runs.items()},
        "executed": list(rig.executed),
        "asked": list(rig.asked),
        "inferences": rig.executor.calls,
    }


async def parked_of(rig: Rig, thread_id: str = THREAD) -> ParkedRun | None:
    return (await rig.store.load(ScopeBinding(thread_id, "default", "default"))).parked


async def assert_rejected(
    rig: Rig, attempt: Callable[[], Any], match: str, *threads: str
) -> ResumeRejected:
    """``attempt()`` raises ResumeRejected matching ``match`` and changes nothing."""
    threads = threads or (THREAD,)
    before = [await snapshot(rig, t) for t in threads]
    with pytest.raises(ResumeRejected, match=match) as info:
        await attempt()
    after = [await snapshot(rig, t) for t in threads]
    assert after == before
    return info.value


def assert_one_winner(results: Sequence[Any]) -> None:
    """One concurrent resume went through; the other was refused (rejected, or busy)."""
    assert [type(r).__name__ for r in results].count("RunState") == 1, results
    losers = [r for r in results if type(r).__name__ != "RunState"]
    assert all(isinstance(r, ResumeRejected | ThreadBusy) for r in losers), losers


def tool_results(messages: Sequence[Message]) -> dict[str, list[str]]:
    """``call id -> contents`` of every tool message."""
    found: dict[str, list[str]] = {}
    for m in messages:
        if m.role == "tool":
            found.setdefault(m.tool_call_id or "", []).append(m.text)
    return found


def assert_every_call_answered_once(messages: Sequence[Message]) -> None:
    calls = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls or []]
    results = [m.tool_call_id for m in messages if m.role == "tool"]
    assert sorted(calls) == sorted(results), (calls, results)
    assert len(set(results)) == len(results)


# -- parking ----------------------------------------------------------------------------


@pytest.mark.parametrize("reason", list(AwaitReason))
async def test_gate_suspend_parks_the_run(reason: AwaitReason) -> None:
    rig = build([calls_turn(("g1", "wait_for", {"reason": reason.value})), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)

    assert state.phase is Phase.WAITING
    assert state.end_cause is None
    assert len(state.tickets) == 1
    ticket = state.tickets[0]
    assert ticket.run_id == state.run_id
    assert ticket.thread_id == THREAD
    assert ticket.fingerprint == rig.runtime.resolve(AGENT).fingerprint
    assert ticket.await_reason is reason
    assert ticket.call == ToolCall(id="g1", name="wait_for", arguments={"reason": reason.value})
    assert ticket.payload == {"why": reason.value}
    assert ticket.deadline is None and ticket.not_before is None
    assert ticket.signature is None
    assert rig.executed == []

    parked = await parked_of(rig)
    assert parked is not None
    assert parked.run_id == state.run_id and parked.agent_id == AGENT
    assert parked.tickets == [ticket]
    assert parked.snapshot_id == ticket.snapshot_id
    assert parked.fingerprint == ticket.fingerprint
    # Messages up to the park are committed: the input and the assistant's call.
    messages = rig.store.messages(THREAD)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert [c.id for c in messages[1].tool_calls or []] == ["g1"]
    assert rig.store.runs[state.run_id].phase is Phase.WAITING
    # The ticket is JSON.
    assert ResumeTicket.model_validate_json(ticket.model_dump_json()) == ticket


@pytest.mark.parametrize("reason", list(AwaitReason))
async def test_tool_suspend_call_parks_the_run(reason: AwaitReason) -> None:
    args = {"question": "colour?", "reason": reason.value}
    rig = build([calls_turn(("q1", "ask", args)), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)

    assert state.phase is Phase.WAITING
    (ticket,) = state.tickets
    assert ticket.run_id == state.run_id and ticket.thread_id == THREAD
    assert ticket.fingerprint == rig.runtime.resolve(AGENT).fingerprint
    assert ticket.await_reason is reason
    # The parked call carries the coerced arguments the gates saw, defaults included.
    assert ticket.call == ToolCall(id="q1", name="ask", arguments={**args, "ttl": None})
    assert ticket.payload == {"question": "colour?"}
    assert rig.asked == ["q1"]
    assert (await parked_of(rig)).tickets == [ticket]  # type: ignore[union-attr]
    assert [m.role for m in rig.store.messages(THREAD)] == ["user", "assistant"]


async def test_new_run_on_a_waiting_thread_raises_thread_busy() -> None:
    rig = build([calls_turn(("q1", "ask", {"question": "?"})), "unused"])
    await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    before = await snapshot(rig)
    with pytest.raises(ThreadBusy):
        await rig.runtime.run(AGENT, "another", thread_id=THREAD)
    assert await snapshot(rig) == before
    # Other threads are unaffected.
    state = await rig.runtime.run(AGENT, "elsewhere", thread_id="t-other")
    assert state.phase is Phase.ENDED


async def test_schedule_parks_until_its_time() -> None:
    at = datetime.now(UTC) + timedelta(seconds=0.4)
    rig = build([calls_turn(("s1", "later", {"at": at.isoformat()})), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)

    assert state.phase is Phase.WAITING
    (ticket,) = state.tickets
    assert ticket.await_reason is AwaitReason.SCHEDULED_ACTION
    assert ticket.not_before == at
    assert ticket.payload == {"at": at.isoformat()}
    assert ticket.call.id == "s1"

    await assert_rejected(rig, lambda: rig.runtime.resume(ticket, Approve()), "scheduled")
    assert rig.executed == []

    await asyncio.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()) + 0.05)
    final = await rig.runtime.resume(ticket, Approve())
    assert final.phase is Phase.ENDED and isinstance(final.end_cause, NaturalEnd)
    assert rig.executed == [("s1", "later", {"at": at.isoformat()})]
    assert tool_results(rig.store.messages(THREAD)) == {"s1": ["later ran"]}


# -- several suspended calls in one step --------------------------------------------------

THREE_CALLS = calls_turn(
    ("a", "dangerous", {"x": 50}),  # the gate suspends it
    ("b", "safe", {"x": 2}),  # runs right away
    ("c", "ask", {"question": "colour?"}),  # the tool suspends itself
)


async def _three_parked() -> tuple[Rig, ResumeTicket, ResumeTicket]:
    rig = build([THREE_CALLS, summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    assert state.phase is Phase.WAITING
    t_a, t_c = state.tickets
    return rig, t_a, t_c


async def test_two_of_three_calls_suspend_and_the_third_runs_immediately() -> None:
    rig, t_a, t_c = await _three_parked()
    # Only b ran, while a and c wait; c's tool body was entered once (it suspended).
    assert rig.executed == [("b", "safe", {"x": 2})]
    assert rig.asked == ["c"]
    assert [t_a.call.id, t_c.call.id] == ["a", "c"]
    assert t_a.ticket_id != t_c.ticket_id
    assert t_a.await_reason is AwaitReason.TOOL_PERMISSION and t_a.payload == {"x": 50}
    assert t_c.await_reason is AwaitReason.USER_INPUT and t_c.payload == {"question": "colour?"}
    messages = rig.store.messages(THREAD)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert [c.id for c in messages[1].tool_calls or []] == ["a", "b", "c"]
    assert tool_results(messages) == {"b": ["safe 2"]}


async def test_calls_that_do_not_suspend_run_in_model_order() -> None:
    turn = calls_turn(
        ("s1", "safe", {"x": 1}),
        ("p1", "dangerous", {"x": 99}),
        ("s2", "safe", {"x": 2}),
        ("p2", "ask", {"question": "?"}),
        ("s3", "safe", {"x": 3}),
    )
    rig = build([turn, summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    assert state.phase is Phase.WAITING
    assert [t.call.id for t in state.tickets] == ["p1", "p2"]
    assert [e[0] for e in rig.executed] == ["s1", "s2", "s3"]
    results = [m.tool_call_id for m in rig.store.messages(THREAD) if m.role == "tool"]
    assert results == ["s1", "s2", "s3"]


@pytest.mark.parametrize(
    ("decision", "a_content", "a_executed", "a_error"),
    [
        (Approve(), "did 50", [("a", "dangerous", {"x": 50})], False),
        (Deny(reason="too risky"), "too risky", [], True),
        (Respond(value={"answer": 42}), '{"answer":42}', [], False),
        (Replay(arguments={"x": 3}), "did 3", [("a", "dangerous", {"x": 3})], False),
    ],
    ids=["approve", "deny", "respond", "replay"],
)
async def test_resume_in_reverse_order_one_decision_at_a_time(
    decision: Any, a_content: str, a_executed: Executed, a_error: bool
) -> None:
    rig, t_a, t_c = await _three_parked()

    # The later call first: c gets the user's answer without running the tool again.
    state = await rig.runtime.resume(t_c, Respond(value="blue"))
    assert state.phase is Phase.WAITING
    assert [t.ticket_id for t in state.tickets] == [t_a.ticket_id]
    assert state.tickets[0] == t_a
    assert rig.asked == ["c"]
    assert tool_results(rig.store.messages(THREAD)) == {"b": ["safe 2"], "c": ["blue"]}
    assert (await parked_of(rig)).tickets == [t_a]  # type: ignore[union-attr]
    assert rig.executor.calls == 1

    # Then the first call.
    state = await rig.runtime.resume(t_a, decision)
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    assert await parked_of(rig) is None
    assert rig.executed == [("b", "safe", {"x": 2}), *a_executed]
    assert rig.asked == ["c"]

    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    by_id = {m.tool_call_id: m for m in messages if m.role == "tool"}
    assert by_id["b"].text == "safe 2"
    assert by_id["c"].text == "blue"
    assert a_content in by_id["a"].text
    assert bool(by_id["a"].metadata.get("is_error")) is a_error
    assert by_id["a"].name == "dangerous"
    # The model saw every result on its own call in the next request.
    last_request = rig.executor.requests[-1]
    seen = {m.tool_call_id: m.text for m in last_request.messages if m.role == "tool"}
    assert seen == {"a": by_id["a"].text, "b": "safe 2", "c": "blue"}
    assert state.final_text.startswith("results: ")
    assert messages[-1].role == "assistant" and messages[-1].text == state.final_text


async def test_approve_runs_the_tool_exactly_once() -> None:
    rig, t_a, t_c = await _three_parked()
    await rig.runtime.resume(t_a, Approve())
    await rig.runtime.resume(t_c, Respond(value="blue"))
    assert [e for e in rig.executed if e[0] == "a"] == [("a", "dangerous", {"x": 50})]
    assert tool_results(rig.store.messages(THREAD))["a"] == ["did 50"]


async def test_replay_into_a_suspending_call_parks_it_again() -> None:
    """Replay goes through every gate again: new arguments over the limit park again."""
    rig, t_a, t_c = await _three_parked()
    state = await rig.runtime.resume(t_a, Replay(arguments={"x": 70}))
    assert state.phase is Phase.WAITING
    assert sorted(t.call.id for t in state.tickets) == ["a", "c"]
    (t_a2,) = [t for t in state.tickets if t.call.id == "a"]
    assert t_a2.ticket_id != t_a.ticket_id
    assert t_a2.call.arguments == {"x": 70} and t_a2.payload == {"x": 70}
    assert rig.executed == [("b", "safe", {"x": 2})]
    await assert_rejected(rig, lambda: rig.runtime.resume(t_a, Approve()), "not pending")
    state = await rig.runtime.resume_many([(t_a2, Approve()), (t_c, Respond(value="x"))])
    assert state.phase is Phase.ENDED
    assert rig.executed[-1] == ("a", "dangerous", {"x": 70})
    assert_every_call_answered_once(rig.store.messages(THREAD))


async def test_resume_many_applies_each_decision_to_its_own_call() -> None:
    rig, t_a, t_c = await _three_parked()
    state = await rig.runtime.resume_many([(t_c, Respond(value="green")), (t_a, Deny(reason="no"))])
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    results = tool_results(rig.store.messages(THREAD))
    assert results["c"] == ["green"]
    assert len(results["a"]) == 1 and "no" in results["a"][0]
    assert rig.executed == [("b", "safe", {"x": 2})]
    assert_every_call_answered_once(rig.store.messages(THREAD))


# -- duplicate and stale decisions ----------------------------------------------------------


async def test_duplicate_decision_rejected_and_nothing_changes() -> None:
    rig, t_a, t_c = await _three_parked()
    await rig.runtime.resume(t_c, Respond(value="blue"))
    for again in (t_c, json.loads(t_c.model_dump_json()), t_c.model_dump_json()):
        await assert_rejected(
            rig, lambda again=again: rig.runtime.resume(again, Approve()), "not pending"
        )
    # Also when mixed with a valid decision: the valid one is not applied either.
    await assert_rejected(
        rig, lambda: rig.runtime.resume_many([(t_a, Approve()), (t_c, Approve())]), "not pending"
    )
    assert all(e[0] != "a" for e in rig.executed)


async def test_duplicate_within_one_resume_many_rejected() -> None:
    rig, t_a, t_c = await _three_parked()
    await assert_rejected(
        rig,
        lambda: rig.runtime.resume_many([(t_a, Approve()), (t_a, Deny(reason="again"))]),
        "twice",
    )
    copy = ResumeTicket.model_validate_json(t_a.model_dump_json())
    await assert_rejected(
        rig,
        lambda: rig.runtime.resume_many(
            [(t_c, Respond(value="x")), (t_a, Approve()), (copy, Approve())]
        ),
        "twice",
    )
    assert rig.executed == [("b", "safe", {"x": 2})]
    # The run is still fully resumable afterwards.
    state = await rig.runtime.resume_many([(t_a, Approve()), (t_c, Respond(value="x"))])
    assert state.phase is Phase.ENDED


async def test_decision_for_a_finished_run_rejected() -> None:
    rig = build([THREE_CALLS, summary, calls_turn(("d", "dangerous", {"x": 60})), summary])
    first = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    old_a, old_c = first.tickets
    await rig.runtime.resume_many([(old_a, Approve()), (old_c, Respond(value="x"))])

    # No waiting run on the thread at all.
    for stale in (old_a, old_c):
        await assert_rejected(
            rig, lambda stale=stale: rig.runtime.resume(stale, Approve()), "no waiting run"
        )
    # A new run waits on the thread: the old tickets still do not apply.
    second = await rig.runtime.run(AGENT, "again", thread_id=THREAD)
    assert second.phase is Phase.WAITING
    await assert_rejected(rig, lambda: rig.runtime.resume(old_a, Approve()), "not pending")
    # An old ticket rewritten to the new run's id is still not pending.
    forged = old_a.model_copy(update={"run_id": second.run_id})
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), "not pending")
    assert sum(1 for e in rig.executed if e[0] == "a") == 1


async def test_cancelled_run_tickets_are_stale() -> None:
    rig, t_a, t_c = await _three_parked()
    await rig.runtime.cancel_waiting(THREAD)
    await assert_rejected(rig, lambda: rig.runtime.resume(t_a, Approve()), "no waiting run")
    await assert_rejected(
        rig, lambda: rig.runtime.resume(t_c, Respond(value="x")), "no waiting run"
    )


async def test_tickets_of_two_threads_in_one_resume_rejected() -> None:
    rig = build([THREE_CALLS, THREE_CALLS], executor=None)
    one = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    two = await rig.runtime.run(AGENT, "go", thread_id="t-two")
    await assert_rejected(
        rig,
        lambda: rig.runtime.resume_many([(one.tickets[0], Approve()), (two.tickets[0], Approve())]),
        "same thread",
        THREAD,
        "t-two",
    )


async def test_empty_and_malformed_resumes_rejected() -> None:
    rig, t_a, _t_c = await _three_parked()
    await assert_rejected(rig, lambda: rig.runtime.resume_many([]), "no decisions")
    await assert_rejected(rig, lambda: rig.runtime.resume("{not json", Approve()), "malformed")
    data = t_a.model_dump(mode="json")
    del data["fingerprint"]
    await assert_rejected(rig, lambda: rig.runtime.resume(data, Approve()), "malformed")


async def test_concurrent_resumes_of_one_ticket_run_the_tool_once() -> None:
    rig = build([calls_turn(("m1", "transfer", {"amount": 5})), summary])
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    results = await asyncio.gather(
        rig.runtime.resume(ticket, Approve()),
        rig.runtime.resume(ticket.model_dump_json(), Approve()),
        return_exceptions=True,
    )
    assert_one_winner(results)
    assert rig.executed == [("m1", "transfer", {"amount": 5})]
    assert tool_results(rig.store.messages(THREAD)) == {"m1": ["moved 5"]}


@pytest.mark.parametrize("leases", [True, False], ids=["store_with_leases", "store_without_leases"])
async def test_concurrent_resumes_from_two_runtimes_on_one_store_run_the_tool_once(
    leases: bool,
) -> None:
    """Two Runtime instances sharing a store (two workers) get the same decision: the
    tool runs once.

    At commit be543df both ran the tool: ``Runtime.resume_many`` (``_runtime.py``)
    validates with ``_check``, then ``AgentLoop.resume`` runs the tool before anything
    is committed, and the per-runtime ``asyncio.Lock`` does not span runtimes, so the
    loser was only rejected at its first checkpoint, after its side effect. The working
    tree now holds a store lease around resume (``hold_lease``), but that is a no-op
    for a ThreadStore without lease methods, so the ``store_without_leases`` case
    still runs the tool twice. Port-independent fix: claim the decided tickets first
    (a commit at the loaded version removing them from the parked record; the loser
    gets ``VersionConflict`` before any side effect).
    """
    store = InMemoryStore() if leases else CountingStore()
    rig = build([calls_turn(("m1", "transfer", {"amount": 5}))], store=store)
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    workers = [build([summary], store=rig.store, executed=rig.executed) for _ in range(2)]
    results = await asyncio.gather(
        *(w.runtime.resume(ticket.model_dump_json(), Approve()) for w in workers),
        return_exceptions=True,
    )
    assert_one_winner(results)
    assert tool_results(rig.store.messages(THREAD)) == {"m1": ["moved 5"]}
    assert rig.executed == [("m1", "transfer", {"amount": 5})], "the tool ran twice"


async def test_approving_a_call_the_tool_suspended_does_not_suspend_it_again() -> None:
    """BUG (design gap): an approved interrupt fires again.

    A tool that raises ``SuspendCall(TOOL_PERMISSION)`` is re-run on ``Approve``
    (``AgentLoop._apply`` -> ``_tool_call(call, approved=True)``; ``approved`` only
    drops gate decisions, ``ToolCallRunner._tool_call`` in ``_tool_calls.py``) and,
    having no way to learn it was approved (``ToolCallContext`` carries no decision),
    suspends again: the run parks the same call under a new ticket, forever. Fix: give
    the tool the decision (e.g. ``ToolCallContext.approved``/``decision``) or turn a
    ``SuspendCall`` raised during an approved re-run into an error result.
    """
    rig = build(
        [calls_turn(("q1", "ask", {"question": "may I?", "reason": "tool_permission"})), summary]
    )
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    state = await rig.runtime.resume(ticket, Approve())
    assert [t.call.id for t in state.tickets if t.call.id == "q1"] == [], (
        "the approved call was parked again"
    )
    assert state.phase is Phase.ENDED
    assert_every_call_answered_once(rig.store.messages(THREAD))


@pytest.mark.parametrize(
    "bad",
    [{"kind": "bogus"}, "approve", None, 42, Suspend(await_reason=AwaitReason.USER_INPUT)],
    ids=["unknown_kind", "string", "none", "int", "gate_decision"],
)
async def test_malformed_decision_rejected(bad: Any) -> None:
    """BUG: ``resume_many`` accepts any object as a decision.

    ``AgentLoop._apply`` (``_loop.py``) matches Approve/Replay/Deny/Respond with an
    ``if/elif`` chain that has no ``else``: anything else consumes the ticket, records
    no tool result and the run continues with an unanswered tool call. Fix: validate
    decisions in ``Runtime.resume_many`` (``TypeAdapter(Decision)`` with the ``kind``
    discriminator, so JSON decisions work too) and raise ``ResumeRejected`` before
    any change; add ``else: raise TypeError`` in ``_apply``.
    """
    rig, t_a, _t_c = await _three_parked()
    await assert_rejected(rig, lambda: rig.runtime.resume(t_a, bad), "decision")


async def test_decision_sent_as_json_never_leaves_a_call_unanswered() -> None:
    """A JSON decision (``{"kind": "approve"}``) is applied as Approve or rejected."""
    rig, t_a, t_c = await _three_parked()
    before = await snapshot(rig)
    try:
        state = await rig.runtime.resume_many(
            [(t_a, {"kind": "approve"}), (t_c, {"kind": "respond", "value": "blue"})]  # type: ignore[list-item]
        )
    except ResumeRejected:
        assert await snapshot(rig) == before
        return
    assert state.phase is Phase.ENDED
    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert tool_results(messages) == {"b": ["safe 2"], "a": ["did 50"], "c": ["blue"]}


# -- exact match of every field --------------------------------------------------------------

FAR = datetime(2099, 1, 1, tzinfo=UTC)

MISMATCHES: dict[str, tuple[dict[str, Any], str]] = {
    "ticket_id": ({"ticket_id": "tkt_forged"}, "not pending"),
    "run_id": ({"run_id": "run_other"}, "'run_id'"),
    "thread_id": ({"thread_id": "t-elsewhere"}, "no waiting run"),
    "snapshot_id": ({"snapshot_id": "snap_other"}, "'snapshot_id'"),
    "fingerprint": ({"fingerprint": "0" * 64}, "'fingerprint'"),
    "await_reason": ({"await_reason": AwaitReason.MANUAL_PAUSE}, "'await_reason'"),
    "call.arguments": (
        {"call": ToolCall(id="a", name="dangerous", arguments={"x": 5})},
        "'call'",
    ),
    "call.name": ({"call": ToolCall(id="a", name="safe", arguments={"x": 50})}, "'call'"),
    "call.id": ({"call": ToolCall(id="c", name="dangerous", arguments={"x": 50})}, "'call'"),
    "payload": ({"payload": {"x": 1}}, "'payload'"),
    "payload_extra_key": ({"payload": {"x": 50, "approved": True}}, "'payload'"),
    "deadline": ({"deadline": FAR}, "'deadline'"),
    "not_before": ({"not_before": datetime(2000, 1, 1, tzinfo=UTC)}, "'not_before'"),
    "signature": ({"signature": "f" * 64}, "'signature'"),
}


@pytest.mark.parametrize("case", list(MISMATCHES))
async def test_every_field_mismatch_rejected(case: str) -> None:
    rig, t_a, t_c = await _three_parked()
    update, match = MISMATCHES[case]
    forged = t_a.model_copy(update=update)
    assert forged != t_a
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), match)
    # Also through JSON, and also when bundled with a valid decision.
    await assert_rejected(
        rig, lambda: rig.runtime.resume(forged.model_dump_json(), Approve()), match
    )
    if case != "thread_id":
        await assert_rejected(
            rig,
            lambda: rig.runtime.resume_many([(t_c, Respond(value="x")), (forged, Approve())]),
            match,
        )
    assert rig.executed == [("b", "safe", {"x": 2})]
    # The genuine ticket still works.
    state = await rig.runtime.resume_many([(t_a, Approve()), (t_c, Respond(value="x"))])
    assert state.phase is Phase.ENDED


async def test_deadline_in_the_past_rejected_as_expired() -> None:
    args = {"question": "quick?", "ttl": -1.0}
    rig = build([calls_turn(("q1", "ask", args)), summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    (ticket,) = state.tickets
    assert ticket.deadline is not None and ticket.deadline < datetime.now(UTC)
    for decision in (Respond(value="late"), Approve(), Deny(reason="late")):
        await assert_rejected(
            rig, lambda decision=decision: rig.runtime.resume(ticket, decision), "expired"
        )
    # A waiting run whose only ticket expired can still be cancelled.
    assert (await rig.runtime.cancel_waiting(THREAD)).phase is Phase.ENDED


async def test_deadline_honoured_once_it_passes() -> None:
    rig = build([calls_turn(("q1", "ask", {"question": "?", "ttl": 0.3})), summary])
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    assert ticket.deadline is not None
    await asyncio.sleep(max(0.0, (ticket.deadline - datetime.now(UTC)).total_seconds()) + 0.05)
    await assert_rejected(rig, lambda: rig.runtime.resume(ticket, Respond(value="x")), "expired")


async def test_deadline_in_the_future_accepted() -> None:
    rig = build([calls_turn(("q1", "ask", {"question": "?", "ttl": 3600.0})), summary])
    (ticket,) = (await rig.runtime.run(AGENT, "go", thread_id=THREAD)).tickets
    assert ticket.deadline is not None and ticket.deadline > datetime.now(UTC)
    state = await rig.runtime.resume(ticket, Respond(value="in time"))
    assert state.phase is Phase.ENDED
    assert tool_results(rig.store.messages(THREAD)) == {"q1": ["in time"]}


# -- a changed agent ----------------------------------------------------------------------------

CHANGES: dict[str, dict[str, Any]] = {
    "tool_description": {"description": "A different description."},
    "plugin_config": {"limit": 20},
    "model": {"model": "scripted-2"},
    "instructions": {"instructions": "You are another agent."},
}


@pytest.mark.parametrize("change", list(CHANGES))
async def test_changed_agent_rejected(change: str) -> None:
    rig, t_a, _t_c = await _three_parked()
    rebuilt = build(
        [summary],
        store=rig.store,
        executed=rig.executed,
        asked=rig.asked,
        **CHANGES[change],
    )
    assert rebuilt.runtime.resolve(AGENT).fingerprint != t_a.fingerprint
    before = await snapshot(rig)
    with pytest.raises(ResumeRejected, match="changed") as info:
        await rebuilt.runtime.resume(t_a, Approve())
    assert "agent" in str(info.value)
    assert await snapshot(rig) == before
    assert rebuilt.executor.calls == 0


async def test_unchanged_rebuild_has_the_same_fingerprint() -> None:
    one, two = build(), build()
    assert one.runtime.resolve(AGENT).fingerprint == two.runtime.resolve(AGENT).fingerprint


# -- signed tickets ----------------------------------------------------------------------------


class CountingStore:
    """A ThreadStore that forwards to an InMemoryStore and counts loads."""

    def __init__(self) -> None:
        self.inner = InMemoryStore()
        self.loads = 0
        self.runs = self.inner.runs

    async def load(self, binding: ScopeBinding) -> Any:
        self.loads += 1
        return await self.inner.load(binding)

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        return await self.inner.commit(*args, **kwargs)

    def messages(self, thread_id: str) -> list[Message]:
        return self.inner.messages(thread_id)

    def batches(self, thread_id: str) -> list[Any]:
        return self.inner.batches(thread_id)


async def _signed_parked() -> tuple[Rig, ResumeTicket, ResumeTicket]:
    rig = build([THREE_CALLS, summary], store=CountingStore(), secret=SECRET)
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    t_a, t_c = state.tickets
    return rig, t_a, t_c


async def test_signed_tickets_carry_a_valid_signature() -> None:
    rig, t_a, t_c = await _signed_parked()
    for t in (t_a, t_c):
        assert t.signature is not None
        assert t.verify(SECRET)
        assert not t.verify(b"another secret")
    assert (await parked_of(rig)).tickets == [t_a, t_c]  # type: ignore[union-attr]
    # After a JSON round trip the signature still verifies and the resume is accepted.
    state = await rig.runtime.resume(json.loads(t_c.model_dump_json()), Respond(value="blue"))
    assert state.phase is Phase.WAITING
    (kept,) = state.tickets
    assert kept == t_a and kept.verify(SECRET)
    state = await rig.runtime.resume(t_a.model_dump_json(), Approve())
    assert state.phase is Phase.ENDED


TAMPER: dict[str, dict[str, Any]] = {
    **{name: update for name, (update, _match) in MISMATCHES.items() if name != "signature"},
}


@pytest.mark.parametrize("case", list(TAMPER))
async def test_tampered_signed_ticket_rejected_before_lookup(case: str) -> None:
    rig, t_a, _t_c = await _signed_parked()
    forged = t_a.model_copy(update=TAMPER[case])
    assert forged.signature == t_a.signature
    loads = rig.store.loads
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), "signature")
    # assert_rejected loads the thread twice itself (before/after snapshots).
    assert rig.store.loads == loads + 2


@pytest.mark.parametrize(
    "variant",
    ["unsigned", "other_secret", "garbage", "truncated"],
)
async def test_unsigned_or_wrongly_signed_ticket_rejected(variant: str) -> None:
    rig, t_a, _t_c = await _signed_parked()
    forged = {
        "unsigned": lambda: t_a.model_copy(update={"signature": None}),
        "other_secret": lambda: t_a.model_copy(update={"signature": None}).signed(b"other"),
        "garbage": lambda: t_a.model_copy(update={"signature": "not-a-mac"}),
        "truncated": lambda: t_a.model_copy(update={"signature": (t_a.signature or "")[:-2]}),
    }[variant]()
    loads = rig.store.loads
    await assert_rejected(rig, lambda: rig.runtime.resume(forged, Approve()), "signature")
    assert rig.store.loads == loads + 2
    # A forged field re-signed under another secret does not help either.
    resigned = t_a.model_copy(update={"payload": {"x": 1}, "signature": None}).signed(b"other")
    await assert_rejected(rig, lambda: rig.runtime.resume(resigned, Approve()), "signature")


# -- resume from a new Runtime ---------------------------------------------------------------------


@pytest.mark.parametrize("form", ["json_str", "json_dict"])
async def test_resume_after_json_round_trip_in_a_new_runtime(form: str) -> None:
    store = InMemoryStore()
    first = build([THREE_CALLS], store=store)
    state = await first.runtime.run(AGENT, "go", thread_id=THREAD)
    wire = [t.model_dump_json() for t in state.tickets]
    del first  # nothing but the store and the JSON survives

    second = build([summary], store=store)
    assert second.runtime is not None
    decoded = wire if form == "json_str" else [json.loads(w) for w in wire]
    mid = await second.runtime.resume(decoded[1], Respond(value="blue"))
    assert mid.phase is Phase.WAITING and mid.run_id == state.run_id

    third = build([summary], store=store)
    final = await third.runtime.resume(decoded[0], Approve())
    assert final.phase is Phase.ENDED and isinstance(final.end_cause, NaturalEnd)
    assert final.run_id == state.run_id
    assert third.executed == [("a", "dangerous", {"x": 50})]
    assert second.executed == []
    messages = store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert tool_results(messages) == {"b": ["safe 2"], "c": ["blue"], "a": ["did 50"]}
    assert messages[-1].text == "results: b=safe 2 | c=blue | a=did 50"
    assert store.runs[state.run_id].phase is Phase.ENDED


# -- run_to_completion ---------------------------------------------------------------------------

TWO_PARKS = [
    calls_turn(("a", "dangerous", {"x": 50}), ("c", "ask", {"question": "colour?"})),
    calls_turn(("d", "dangerous", {"x": 77})),
    summary,
]


def _answer(ticket: ResumeTicket) -> Any:
    if ticket.await_reason is AwaitReason.USER_INPUT:
        return Respond(value=f"answer to {ticket.payload['question']}")
    return Approve()


async def test_run_to_completion_with_a_sync_callback() -> None:
    rig = build(TWO_PARKS)
    seen: list[str] = []

    def on_await(ticket: ResumeTicket) -> Any:
        seen.append(ticket.call.id)
        return _answer(ticket)

    state = await rig.runtime.run_to_completion(AGENT, "go", thread_id=THREAD, on_await=on_await)
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    assert seen == ["a", "c", "d"]
    assert [e[0] for e in rig.executed] == ["a", "d"]
    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert tool_results(messages) == {
        "a": ["did 50"],
        "c": ["answer to colour?"],
        "d": ["did 77"],
    }
    assert state.final_text == "results: a=did 50 | c=answer to colour? | d=did 77"
    assert await parked_of(rig) is None


async def test_run_to_completion_with_an_async_callback() -> None:
    rig = build(TWO_PARKS)
    seen: list[tuple[str, AwaitReason]] = []

    async def on_await(ticket: ResumeTicket) -> Any:
        await asyncio.sleep(0)
        seen.append((ticket.call.id, ticket.await_reason))
        if ticket.call.id == "d":
            return Deny(reason="not twice")
        return _answer(ticket)

    state = await rig.runtime.run_to_completion(AGENT, "go", thread_id=THREAD, on_await=on_await)
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    assert seen == [
        ("a", AwaitReason.TOOL_PERMISSION),
        ("c", AwaitReason.USER_INPUT),
        ("d", AwaitReason.TOOL_PERMISSION),
    ]
    assert [e[0] for e in rig.executed] == ["a"]
    results = tool_results(rig.store.messages(THREAD))
    assert "not twice" in results["d"][0]
    assert_every_call_answered_once(rig.store.messages(THREAD))


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
async def test_run_to_completion_callback_returning_none_leaves_the_run_waiting(
    sync: bool,
) -> None:
    rig = build(TWO_PARKS)
    seen: list[str] = []

    def answer(ticket: ResumeTicket) -> Any:
        seen.append(ticket.call.id)
        return Approve() if ticket.call.id == "a" else None

    async def async_answer(ticket: ResumeTicket) -> Any:
        return answer(ticket)

    state = await rig.runtime.run_to_completion(
        AGENT, "go", thread_id=THREAD, on_await=answer if sync else async_answer
    )
    assert state.phase is Phase.WAITING
    assert seen == ["a", "c"]
    assert [t.call.id for t in state.tickets] == ["c"]
    assert (await parked_of(rig)).tickets == state.tickets  # type: ignore[union-attr]
    # It can still be finished by hand.
    final = await rig.runtime.resume(state.tickets[0], Respond(value="later"))
    assert final.phase is Phase.WAITING and [t.call.id for t in final.tickets] == ["d"]


# -- the event stream across suspend/resume ------------------------------------------------------


async def _streamed_legs() -> tuple[list[Any], list[Any], list[Any]]:
    rig = build([THREE_CALLS, summary])
    first = [e async for e in rig.runtime.stream(AGENT, "go", thread_id=THREAD)]
    finish = first[-1]
    _t_a, t_c = finish.tickets
    second = [e async for e in rig.runtime.stream_resume(t_c, Respond(value="blue"))]
    third = [e async for e in rig.runtime.stream_resume(second[-1].ticket, Approve())]
    return first, second, third


async def test_stream_ends_waiting_with_the_ticket_then_resumes_with_run_start() -> None:
    first, second, third = await _streamed_legs()
    run_id = first[0].run_id

    assert isinstance(first[0], RunStart)
    finish = first[-1]
    assert isinstance(finish, RunFinish)
    assert finish.phase is Phase.WAITING and finish.end_cause is None
    assert finish.ticket is not None and finish.ticket == finish.tickets[0]
    assert [t.call.id for t in finish.tickets] == ["a", "c"]
    assert sum(isinstance(e, RunFinish) for e in first) == 1
    suspended = [
        e.call_id for e in first if isinstance(e, ToolCallDone) and e.outcome == "suspended"
    ]
    assert suspended == ["a", "c"]

    for leg in (second, third):
        assert isinstance(leg[0], RunStart)
        assert leg[0].run_id == run_id and leg[0].thread_id == THREAD
        assert isinstance(leg[-1], RunFinish)
        assert sum(isinstance(e, RunFinish) for e in leg) == 1
        assert all(e.run_id == run_id for e in leg)
    assert second[-1].phase is Phase.WAITING
    assert second[-1].ticket.call.id == "a"
    done = {e.call_id: e for e in second if isinstance(e, ToolCallDone)}
    assert done["c"].output == "blue" and done["c"].outcome == "success"
    assert third[-1].phase is Phase.ENDED
    assert isinstance(third[-1].end_cause, NaturalEnd)
    assert third[-1].final_text == "results: b=safe 2 | c=blue | a=did 50"
    assert third[-1].ticket is None and third[-1].tickets == []
    done = {e.call_id: e for e in third if isinstance(e, ToolCallDone)}
    assert done["a"].output == "did 50" and done["a"].outcome == "success"


async def test_stream_seq_strictly_increases_across_legs() -> None:
    """Regression: at commit be543df a resumed leg's RunStart reused the seq of the
    parked leg's RunFinish (``AgentLoop._park_run`` stored ``seq=self._seq + 1``, which
    the parking RunFinish then took, and ``AgentLoop.restore`` set
    ``self._seq = parked.seq - 1``).
    """
    first, second, third = await _streamed_legs()
    for leg in (first, second, third):
        seqs = [e.seq for e in leg]
        assert seqs == sorted(set(seqs)), seqs
    assert second[0].seq > first[-1].seq, (first[-1].seq, second[0].seq)
    assert third[0].seq > second[-1].seq, (second[-1].seq, third[0].seq)
    everything = [e.seq for e in (*first, *second, *third)]
    assert everything == sorted(set(everything))
