"""The client under test in the conformance suite's client mode: awaken's MCP client plugin.

The suite runs ``python awaken_client.py <server url>`` once per scenario
(``MCP_CONFORMANCE_SCENARIO`` names it). This builds a runtime whose agent
enables the ``mcp`` plugin with that server (streamable HTTP), resolves the
agent (connect, list tools), and runs it with a scripted model that calls
every listed tool once (with arguments the scenario's tools take). A
``USER_INPUT`` ticket (a server's elicitation) is answered as a user who
accepts the form without filling it in, so the schema's defaults apply.
Exit status 0 when the run ends normally, 1 otherwise (the reason on stderr).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/mcp: mcp_rig

from mcp_rig import ScriptedTurn, build

from awaken_mcp import McpServerConfig
from awaken_runtime import AwaitReason, Phase, Respond

ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}
"""Arguments for the scenarios' tools that need some; every other tool gets ``{}``."""


async def main(url: str) -> int:
    server = McpServerConfig(id="sut", transport="http", url=url, timeout=20, connect_timeout=20)
    calls: list[str] = []

    def model(request: Any) -> Any:
        tools = sorted(t.id for t in request.tools)
        todo = [t for t in tools if t not in calls]
        if not todo:
            return "done"
        calls.append(todo[0])
        name = todo[0].removeprefix("sut__")
        return ScriptedTurn.call(todo[0], ARGUMENTS.get(name, {}))

    rt = build([model] * 64, [server])
    try:
        state = await rt.run("a", os.environ.get("MCP_CONFORMANCE_SCENARIO", "go"))
        while state.phase is Phase.WAITING:
            (ticket,) = state.tickets
            if ticket.await_reason is not AwaitReason.USER_INPUT:
                print(f"unexpected ticket: {ticket.await_reason}", file=sys.stderr)
                return 1
            state = await rt.resume(ticket, Respond(value={}))
        for message in state.new_messages:
            if message.role == "tool":
                print(f"{message.name}: {message.text[:200]}", file=sys.stderr)
        if state.phase is not Phase.ENDED or state.final_text != "done":
            print(f"the run did not end normally: {state.end_cause}", file=sys.stderr)
            return 1
        return 0
    finally:
        await rt.aclose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
