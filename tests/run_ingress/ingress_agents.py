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
from typing import Any

import psycopg

from awaken_runtime import (
    AgentConfig,
    AwaitReason,
    CapabilityBound,
    Contributions,
    ModelSpec,
    PluginManifest,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
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
