"""``Runtime.continue_run``: a run whose process died is picked up from its last step.

What the run ingress's workers rely on: with progress records on, each step's
checkpoint carries the run record (steps, usage), so another process can
continue the same run id from the committed transcript: the input is not
appended again, finished steps are not redone, and the run ends once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    Phase,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    ThreadBusy,
    ToolCall,
    tool,
)
from awaken_runtime.stores import SQLiteStore

THREAD = "t-cont"


def _runtime(store: Any, turns: list[Any], gate: asyncio.Event | None = None) -> Any:
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
        .with_store(store)
        .with_progress_records()
        .build()
    )
    runtime.ran = ran
    return runtime


def _call(call_id: str, name: str) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCall(id=call_id, name="step", arguments={"name": name})])


async def _die_in_step_two(store: Any) -> str:
    gate = asyncio.Event()
    first = _runtime(store, [_call("ca", "a"), _call("cb", "b")], gate)
    task = asyncio.ensure_future(first.run("worker", "do a then b", thread_id=THREAD))
    while first.ran != ["a", "b"]:
        await asyncio.sleep(0.005)
    task.cancel()  # the process is gone: nothing after step 1 was committed
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = await store.load(ScopeBinding(THREAD, "default", "default"))
    assert snap.latest_run is not None and snap.latest_run.phase is Phase.RUNNING
    assert snap.latest_run.steps == 1
    return snap.latest_run.run_id


async def test_a_dead_run_continues_from_its_last_step(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db", lease_ttl=0.2)
    run_id = await _die_in_step_two(store)
    second = _runtime(SQLiteStore(tmp_path / "a.db", lease_ttl=0.2), [_call("cb2", "b"), "done"])
    state = await second.continue_run(THREAD)
    assert state is not None and state.run_id == run_id
    assert state.phase is Phase.ENDED and state.end_cause is not None
    assert state.end_cause.kind == "natural_end" and state.final_text == "done"
    assert second.ran == ["b"], "step 1 was redone"
    snap = await store.load(ScopeBinding(THREAD, "default", "default"))
    users = [m.text for m in snap.messages if m.role == "user"]
    assert users == ["do a then b"], "the input was appended again"
    results = [m.text for m in snap.messages if m.role == "tool"]
    assert results == ["did a", "did b"]
    record = await store.get_run(run_id)
    assert record is not None and record.phase is Phase.ENDED and record.steps == 3
    # Nothing left to continue.
    assert await second.continue_run(THREAD) is None


async def test_there_is_nothing_to_continue_on_ended_or_waiting_threads(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    runtime = _runtime(store, ["hello"])
    assert await runtime.continue_run("never-used") is None
    await runtime.run("worker", "hi", thread_id=THREAD)
    assert await runtime.continue_run(THREAD) is None


async def test_a_live_lease_means_the_run_may_be_alive(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db", lease_ttl=30.0)
    await _die_in_step_two(store)
    await store.acquire_lease(THREAD, "still-alive:1", 30.0)
    runtime = _runtime(store, ["x"])
    with pytest.raises(ThreadBusy):
        await runtime.continue_run(THREAD)
