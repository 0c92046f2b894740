"""Streamed events are logged per step, so a client that reconnects can catch up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    AwaitReason,
    ModelSpec,
    Respond,
    ScriptedExecutor,
    ScriptedTurn,
    SuspendCall,
    tool,
)
from awaken_runtime.stores import InMemoryStore, SQLiteStore


@tool
def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


@tool
def ask() -> str:
    """Ask the user."""
    raise SuspendCall(AwaitReason.USER_INPUT, {"q": "?"})


def runtime(store: Any, turns: list[Any]) -> Any:
    return (
        AgentRuntimeBuilder(discover=False)
        .with_store(store)
        .with_model(ModelSpec(id="m", provider="s", model="s"))
        .with_provider("s", ScriptedExecutor(turns, chunk_size=3))
        .with_tool(look)
        .with_tool(ask)
        .with_agent_spec(AgentConfig(id="a", model_binding="m", tool_ids=["look", "ask"]))
        .build()
    )


@pytest.fixture(params=["memory", "sqlite"])
def store(request: Any, tmp_path: Path) -> Any:
    return InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "a.db")


async def test_read_events_returns_what_the_stream_yielded(store: Any) -> None:
    rt = runtime(store, [ScriptedTurn.call("look", {"q": "x"}), "the answer"])
    streamed = [e async for e in rt.stream("a", "go", thread_id="t")]
    run_id = streamed[0].run_id
    logged = await rt.read_events(run_id)
    assert [e.model_dump() for e in logged] == [e.model_dump() for e in streamed]
    # A client that saw up to the first StepEnd catches up from there.
    first_step_end = next(e.seq for e in streamed if e.type == "step_end")
    rest = await rt.read_events(run_id, after=first_step_end)
    assert [e.seq for e in rest] == [e.seq for e in streamed if e.seq > first_step_end]


async def test_a_resumed_leg_appends_to_the_same_log(store: Any) -> None:
    rt = runtime(store, [ScriptedTurn.call("ask"), "done"])
    first = [e async for e in rt.stream("a", "go", thread_id="t")]
    ticket = first[-1].ticket
    second = [e async for e in rt.stream_resume(ticket, Respond(value="blue"))]
    logged = await rt.read_events(first[0].run_id)
    assert [e.seq for e in logged] == [e.seq for e in first + second]
    assert logged[-1].type == "run_finish" and logged[-1].end_cause.kind == "natural_end"


async def test_a_run_that_is_not_streamed_logs_nothing() -> None:
    store = InMemoryStore()
    rt = runtime(store, ["hi"])
    state = await rt.run("a", "go", thread_id="t")
    assert await rt.read_events(state.run_id) == []
