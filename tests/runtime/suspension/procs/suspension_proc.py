"""Helper process for ``test_suspension_process.py``: park in one OS process, resume in another.

    python suspension_proc.py park   STORE_FILE OUT_FILE
    python suspension_proc.py resume STORE_FILE OUT_FILE TICKET_FILE

Both modes build the same agent from the same registries over the SQLite store at
``STORE_FILE`` and write a JSON report to ``OUT_FILE``. ``park`` runs the agent until
it parks and also writes the ticket (JSON) to ``OUT_FILE``; ``resume`` reads the ticket
from ``TICKET_FILE`` and approves it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CapabilityBound,
    Contributions,
    MergePolicy,
    Message,
    ModelSpec,
    PluginManifest,
    Remove,
    ResumeRejected,
    Runtime,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    ToolCall,
    ToolCallContext,
    tool,
)
from awaken_runtime.stores import SQLiteStore

AGENT = "banker"
THREAD = "t-xproc"
SECRET = b"shared-between-processes"


def apply_command(state: dict[Any, Any], command: Any) -> None:
    """Apply one committed command to ``state`` (the store port's replay rule)."""
    slot = (command.scope, command.key)
    action = command.action
    if isinstance(action, Remove):
        state.pop(slot, None)
        return
    current = state.get(slot)
    if (
        command.merge is MergePolicy.COMMUTATIVE
        and isinstance(action.value, dict)
        and isinstance(current, dict)
    ):
        state[slot] = {**current, **action.value}
        return
    state[slot] = action.value


class ApprovalGate:
    """Suspends every ``transfer`` call for the user's permission."""

    manifest = PluginManifest(id="approval", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Contributions:
        def gate(ctx: Any, call: ToolCall) -> Any:
            if call.name == "transfer":
                return Suspend(
                    await_reason=AwaitReason.TOOL_PERMISSION,
                    payload={"amount": call.arguments["amount"]},
                )
            return None

        return Contributions(tool_gates=[gate])


EXECUTED: list[str] = []


@tool
async def balance(account: str, ctx: ToolCallContext) -> str:
    """Look up an account's balance."""
    EXECUTED.append(ctx.call_id)
    return f"{account} has 100"


@tool
async def transfer(amount: int, ctx: ToolCallContext) -> str:
    """Transfer money."""
    EXECUTED.append(ctx.call_id)
    return f"transferred {amount} in pid {os.getpid()}"


def summary(request: Any) -> ScriptedTurn:
    parts = [f"{m.tool_call_id}={m.text}" for m in request.messages if m.role == "tool"]
    return ScriptedTurn(text="done: " + " | ".join(parts))


FIRST_TURN = ScriptedTurn(
    tool_calls=[
        ToolCall(id="call_balance", name="balance", arguments={"account": "acme"}),
        ToolCall(id="call_transfer", name="transfer", arguments={"amount": 25}),
    ]
)


def build(store: SQLiteStore, turns: Sequence[Any]) -> Runtime:
    """The same registries in every process; only the scripted model's turns differ."""
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="scripted", model="scripted-1"))
        .with_provider("scripted", ScriptedExecutor(list(turns)))
        .with_tool(balance)
        .with_tool(transfer)
        .with_plugin(ApprovalGate())
        .with_agent_spec(
            AgentConfig(
                id=AGENT,
                instructions="Move money carefully.",
                model_binding="m",
                tool_ids=["balance", "transfer"],
                plugin_ids=["approval"],
            )
        )
        .with_store(store)
        .with_ticket_secret(SECRET)
        .build()
    )


def transcript(messages: Sequence[Message]) -> list[list[Any]]:
    return [[m.role, m.tool_call_id, m.text, [c.id for c in m.tool_calls or []]] for m in messages]


async def park(store: SQLiteStore) -> dict[str, Any]:
    runtime = build(store, [FIRST_TURN])
    state = await runtime.run(AGENT, "pay acme 25", thread_id=THREAD)
    return {
        "phase": state.phase.value,
        "run_id": state.run_id,
        "fingerprint": runtime.resolve(AGENT).fingerprint,
        "tickets": [t.model_dump_json() for t in state.tickets],
        "executed": EXECUTED,
    }


async def resume(store: SQLiteStore, ticket_json: str) -> dict[str, Any]:
    runtime = build(store, [summary])
    try:
        state = await runtime.resume(ticket_json, Approve())
    except ResumeRejected as exc:
        return {"rejected": exc.reason, "executed": EXECUTED}
    snapshot = await store.load(ScopeBinding(THREAD, "default", "default"))
    return {
        "phase": state.phase.value,
        "run_id": state.run_id,
        "end_cause": state.end_cause.kind if state.end_cause else None,
        "final_text": state.final_text,
        "fingerprint": runtime.resolve(AGENT).fingerprint,
        "executed": EXECUTED,
        "parked": snapshot.parked is not None,
        "transcript": transcript(snapshot.messages),
    }


def main(argv: list[str]) -> None:
    mode, store_file, out_file = argv[1], argv[2], argv[3]
    store = SQLiteStore(store_file)
    if mode == "park":
        report = asyncio.run(park(store))
    elif mode == "resume":
        report = asyncio.run(resume(store, Path(argv[4]).read_text()))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    report["pid"] = os.getpid()
    Path(out_file).write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv)
