"""A run a dead process left running, continued by another runtime: a ``continue`` leg."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from awaken_otel import names as n
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    ScriptedExecutor,
    ScriptedTurn,
    ToolCall,
    tool,
)
from awaken_runtime.stores import SQLiteStore


def _runtime(path: Path, turns: list[Any], observer: Any, gate: asyncio.Event | None) -> Any:
    ran: list[str] = []

    @tool
    async def step(name: str) -> str:
        """Do one step of work."""
        ran.append(name)
        if gate is not None and name == "b":
            await gate.wait()  # the process dies in here
        return f"did {name}"

    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="scripted", model="s"))
        .with_provider("scripted", ScriptedExecutor(turns))
        .with_tool(step)
        .with_agent_spec(AgentConfig(id="worker", model_binding="m", tool_ids=["step"]))
        .with_store(SQLiteStore(path, lease_ttl=0.2))
        .with_progress_records()
        .with_observer(observer)
        .build()
    )
    runtime.ran = ran
    return runtime


def _call(call_id: str, name: str) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCall(id=call_id, name="step", arguments={"name": name})])


async def test_a_continued_run_is_its_own_leg_of_the_same_run(otel: Any, tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    gate = asyncio.Event()
    first = _runtime(path, [_call("ca", "a"), _call("cb", "b")], otel.telemetry(), gate)
    task = asyncio.ensure_future(first.run("worker", "do a then b", thread_id="t"))
    while first.ran != ["a", "b"]:
        await asyncio.sleep(0.005)
    task.cancel()  # the process is gone: its leg never ends, so its span is never exported
    with pytest.raises(asyncio.CancelledError):
        await task
    # The interrupted tool's span did end (and left the context as it found it).
    (interrupted,) = [s for s in otel.spans("execute_tool") if s.attributes[n.TOOL_CALL_ID] == "cb"]
    assert interrupted.attributes[n.AWAKEN_TOOL_OUTCOME] == "cancelled"
    assert otel.spans("invoke_agent") == []

    second = _runtime(path, [_call("cb2", "b"), "done"], otel.telemetry(), None)
    state = await second.continue_run("t")
    assert state is not None and state.final_text == "done"
    (leg,) = otel.spans("invoke_agent")
    assert leg.attributes[n.AWAKEN_LEG] == "continue"
    assert leg.attributes[n.AWAKEN_RUN_ID] == state.run_id
    assert leg.attributes[n.AWAKEN_END_CAUSE] == "natural_end"
    assert leg.attributes[n.AWAKEN_STEPS] == 3
    redone = [s for s in otel.spans("execute_tool") if s.attributes[n.TOOL_CALL_ID] == "cb2"]
    assert redone[0].parent.span_id == leg.context.span_id
