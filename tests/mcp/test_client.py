"""MCP servers as a tool source: real servers over stdio, in scripted runs."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_rig import ScriptedTurn, build, time_server, toy_server

from awaken_runtime import Phase, Runtime


def tool_results(state: object, rt: Runtime) -> list[str]:
    return []


async def test_agent_uses_mcp_server_time_over_stdio(closing: list[Runtime]) -> None:
    rt = build(
        [
            ScriptedTurn.call("time__get_current_time", {"timezone": "Europe/Paris"}),
            "done",
        ],
        [time_server()],
    )
    closing.append(rt)
    snapshot = await rt.aresolve("a")
    ids = {t.id for t in snapshot.tools}
    assert {"time__get_current_time", "time__convert_time"} <= ids
    get = next(t for t in snapshot.tools if t.id == "time__get_current_time")
    assert "timezone" in get.parameters["properties"]
    state = await rt.run("a", "what time is it in Paris?", thread_id="t1")
    assert state.phase is Phase.ENDED, state
    thread = await rt.store.load_messages("t1") if hasattr(rt.store, "load_messages") else None
    print(thread)
