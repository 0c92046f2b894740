"""Helper process for test_delegation.py: a child's suspension crosses processes.

    python delegation_proc.py park   DB OUT_FILE
    python delegation_proc.py resume DB OUT_FILE TICKET_FILE

``park`` runs the parent until its sub-agent parks on a permission ask and
writes the parent's ticket; ``resume`` approves that ticket in a new process
over the same SQLite database and reports the finished run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CapabilityBound,
    Contributions,
    ModelSpec,
    PhaseContext,
    PluginManifest,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    ToolCall,
    tool,
)
from awaken_runtime.stores import SQLiteStore


@tool
def wire_money(amount: int) -> str:
    """Send money."""
    return f"sent {amount} from pid {os.getpid()}"


class Guard:
    """Asks before any wire transfer; inherited by sub-agents."""

    manifest = PluginManifest(id="guard", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Contributions:
        def gate(ctx: PhaseContext, call: ToolCall) -> Suspend | None:
            if call.name == "wire_money":
                return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
            return None

        return Contributions(tool_gates=[gate], inherit=True)


def build(store: SQLiteStore, *, resumed: bool) -> Runtime:
    parent: list[Any] = [
        ScriptedTurn(
            tool_calls=[
                ToolCall(
                    id="d0", name="agent_run", arguments={"agent_id": "banker", "prompt": "pay"}
                )
            ]
        ),
        "Rent handled.",
    ]
    banker: list[Any] = [ScriptedTurn.call("wire_money", {"amount": 900}), "Paid."]
    if resumed:  # this process's scripted models pick up where the first one stopped
        parent, banker = parent[1:], banker[1:]
    builder = AgentRuntimeBuilder(discover=False).with_store(store).with_plugin(Guard())
    builder.with_tool(wire_money)
    for agent_id, turns in (("parent", parent), ("banker", banker)):
        builder.with_model(ModelSpec(id=f"m-{agent_id}", provider=f"p-{agent_id}", model="s"))
        builder.with_provider(f"p-{agent_id}", ScriptedExecutor(turns))
    builder.with_agent_spec(
        AgentConfig(
            id="parent", model_binding="m-parent", delegates=["banker"], plugin_ids=["guard"]
        )
    )
    builder.with_agent_spec(
        AgentConfig(id="banker", model_binding="m-banker", tool_ids=["wire_money"])
    )
    return builder.build()


async def main(mode: str, db: str, out: str, ticket_file: str | None) -> None:
    store = SQLiteStore(db)
    if mode == "park":
        state = await build(store, resumed=False).run("parent", "pay rent", thread_id="t")
        report = {"phase": state.phase.value, "ticket": state.ticket.model_dump_json()}
    else:
        assert ticket_file is not None
        runtime = build(store, resumed=True)
        state = await runtime.resume(Path(ticket_file).read_text(), Approve())
        report = {
            "phase": state.phase.value,
            "final_text": state.final_text,
            "results": [m.text for m in state.new_messages if m.role == "tool"],
            "pid": os.getpid(),
        }
    Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4], sys.argv[4] if len(sys.argv) > 4 else None))
