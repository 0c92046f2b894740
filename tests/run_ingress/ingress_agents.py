"""The agents the ingress tests' worker processes run (``--setup ingress_agents:configure``).

``stepper`` works in five steps, one ``work`` call each, then answers "done".
Its scripted model decides the next step from the transcript, so a run
continued after a crash asks for the step in flight again, under the same
call id (the idempotency key stays the same). ``work`` records every
execution in ``executions`` and, keyed by the idempotency key, the step in
``ledger`` (``AWAKEN_INGRESS_LEDGER`` is the DSN, ``..._LEDGER_SCHEMA`` its schema).
"""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from awaken_runtime import (
    AgentConfig,
    AwaitReason,
    CapabilityBound,
    Contributions,
    HookReaction,
    ModelSpec,
    PhaseContext,
    PhaseHookPoint,
    PluginManifest,
    Schedule,
    ScheduledAction,
    Scope,
    ScriptedExecutor,
    ScriptedTurn,
    StateKey,
    Suspend,
    SuspendCall,
    ToolCall,
    ToolCallContext,
    tool,
)

STEPS = 5


def _turn(request: Any) -> ScriptedTurn | str:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done >= STEPS:
        return "done"
    step = done + 1
    return ScriptedTurn(tool_calls=[ToolCall(id=f"s{step}", name="work", arguments={"step": step})])


def _ledger() -> psycopg.Connection[Any]:
    schema = os.environ["AWAKEN_INGRESS_LEDGER_SCHEMA"]
    return psycopg.connect(
        os.environ["AWAKEN_INGRESS_LEDGER"], autocommit=True, options=f"-c search_path={schema}"
    )


def _record(run_id: str, step: int, key: str) -> None:
    with _ledger() as conn:
        conn.execute(
            "INSERT INTO executions (run_id, step, pid, at) VALUES (%s, %s, %s, %s)",
            (run_id, step, os.getpid(), time.time()),
        )
        conn.execute(
            "INSERT INTO ledger (run_id, step, key) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (run_id, step, key),
        )


@tool
async def work(step: int, ctx: ToolCallContext) -> str:
    """Do one step of work (recorded, keyed by the idempotency key)."""
    await asyncio.to_thread(_record, ctx.run_id, step, ctx.idempotency_key)
    await asyncio.sleep(float(os.environ.get("AWAKEN_INGRESS_STEP_S", "0.05")))
    return f"step {step} done"


class ApproveStepThree:
    """Parks step 3 of the ``careful`` agent for a human's approval."""

    manifest = PluginManifest(id="approve-three", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Contributions:
        def gate(ctx: Any, call: ToolCall) -> Any:
            if call.arguments.get("step") == 3:
                return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
            return None

        return Contributions(tool_gates=[gate])


def configure(builder: Any) -> None:
    """Add the scripted model, the tool, the gate and the agents to a worker's builder."""
    builder.with_model(ModelSpec(id="m", provider="scripted", model="s"))
    builder.with_provider("scripted", ScriptedExecutor([_turn], repeat=True))
    builder.with_tool(work)
    builder.with_plugin(ApproveStepThree())
    builder.with_agent_spec(AgentConfig(id="stepper", model_binding="m", tool_ids=["work"]))
    builder.with_agent_spec(
        AgentConfig(
            id="careful", model_binding="m", tool_ids=["work"], plugin_ids=["approve-three"]
        )
    )


class LaterStepThree:
    """Schedules step 3 of the ``patient`` agent ``AWAKEN_INGRESS_DELAY_S`` seconds out."""

    manifest = PluginManifest(id="later-three", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Contributions:
        def gate(ctx: Any, call: ToolCall) -> Any:
            if call.arguments.get("step") == 3:
                delay = float(os.environ.get("AWAKEN_INGRESS_DELAY_S", "2"))
                return Schedule(at=datetime.now(UTC) + timedelta(seconds=delay))
            return None

        return Contributions(tool_gates=[gate])


def configure_patient(builder: Any) -> None:
    """``configure`` plus the ``patient`` agent, whose step 3 waits for its time."""
    configure(builder)
    builder.with_plugin(LaterStepThree())
    builder.with_agent_spec(
        AgentConfig(id="patient", model_binding="m", tool_ids=["work"], plugin_ids=["later-three"])
    )


@tool
async def ask(question: str) -> str:
    """Ask the user; the answer must come within ``AWAKEN_INGRESS_DEADLINE_S`` seconds."""
    seconds = float(os.environ.get("AWAKEN_INGRESS_DEADLINE_S", "2"))
    raise SuspendCall(
        AwaitReason.USER_INPUT,
        {"question": question},
        deadline=datetime.now(UTC) + timedelta(seconds=seconds),
    )


def _ask_turn(request: Any) -> ScriptedTurn | str:
    if any(m.role == "tool" for m in request.messages):
        return "gave up"
    return ScriptedTurn(tool_calls=[ToolCall(id="q1", name="ask", arguments={"question": "ok?"})])


def configure_asking(builder: Any) -> None:
    """``configure`` plus the ``asker`` agent, whose question has a deadline."""
    configure(builder)
    builder.with_model(ModelSpec(id="m-ask", provider="scripted-ask", model="s"))
    builder.with_provider("scripted-ask", ScriptedExecutor([_ask_turn], repeat=True))
    builder.with_tool(ask)
    builder.with_agent_spec(AgentConfig(id="asker", model_binding="m-ask", tool_ids=["ask"]))


REMINDED = StateKey("reminders.scheduled_for", str, default="", scope=Scope.THREAD)


class Reminders:
    """The ``reminder`` agent's first run schedules a reminder ``AWAKEN_INGRESS_DELAY_S``
    seconds out (its run ends long before); the reminder records when it ran."""

    manifest = PluginManifest(
        id="reminders",
        bound=CapabilityBound(
            phase_hooks=frozenset({PhaseHookPoint.RUN_START}),
            action_handlers=frozenset({"remind"}),
            state_keys=frozenset({REMINDED.decl}),
        ),
    )

    def resolve(self, config: Any) -> Contributions:
        async def schedule(ctx: PhaseContext) -> HookReaction | None:
            if REMINDED.get(ctx.store):
                return None
            delay = float(os.environ.get("AWAKEN_INGRESS_DELAY_S", "2"))
            at = datetime.now(UTC) + timedelta(seconds=delay)
            return HookReaction(
                commands=[REMINDED.set(at.isoformat())],
                schedule=[ScheduledAction(name="remind", payload={"for": "follow-up"}, at=at)],
            )

        async def remind(action: ScheduledAction, ctx: PhaseContext) -> None:
            await asyncio.to_thread(_record, ctx.run.thread_id, 0, action.payload["for"])

        return Contributions(
            phase_hooks={PhaseHookPoint.RUN_START: schedule}, action_handlers={"remind": remind}
        )


def _remind_turn(request: Any) -> str:
    return "reminded" if any(m.role == "assistant" for m in request.messages) else "noted"


def configure_reminders(builder: Any) -> None:
    """``configure`` plus the ``reminder`` agent, whose reminder outlives its first run."""
    configure(builder)
    builder.with_model(ModelSpec(id="m-remind", provider="scripted-remind", model="s"))
    builder.with_provider("scripted-remind", ScriptedExecutor([_remind_turn], repeat=True))
    builder.with_plugin(Reminders())
    builder.with_agent_spec(
        AgentConfig(id="reminder", model_binding="m-remind", plugin_ids=["reminders"])
    )
