"""The suspension tests' agent and checks (imported by the ``test_*`` files here).

The agent has a gate plugin that suspends ``dangerous`` calls with
``x >= LIMIT``, ``wait_for`` and ``transfer``, and schedules ``later``; its
tools record every execution. ``snapshot`` is everything a rejected resume
must leave untouched, and ``assert_rejected`` compares it before and after.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    AwaitReason,
    CapabilityBound,
    Contributions,
    InMemoryStore,
    Message,
    ModelSpec,
    ParkedRun,
    Phase,
    PluginManifest,
    ResumeRejected,
    ResumeTicket,
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


THREE_CALLS = calls_turn(
    ("a", "dangerous", {"x": 50}),  # the gate suspends it
    ("b", "safe", {"x": 2}),  # runs right away
    ("c", "ask", {"question": "colour?"}),  # the tool suspends itself
)


async def three_parked() -> tuple[Rig, ResumeTicket, ResumeTicket]:
    """A run parked on ``a`` (the gate) and ``c`` (the tool); ``b`` ran."""
    rig = build([THREE_CALLS, summary])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    assert state.phase is Phase.WAITING
    t_a, t_c = state.tickets
    return rig, t_a, t_c


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
