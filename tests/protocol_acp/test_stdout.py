"""stdout of ``awaken acp`` carries protocol frames only: what tools, setup hooks and
libraries print (through ``print``, ``sys.stdout`` or descriptor 1) goes to stderr."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from acp_rig import HERE, LIMIT, acp_args, agent_env, awaken


def _frame(id_: int, method: str, params: dict[str, Any]) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n"
    ).encode()


async def _until_response(
    stdout: asyncio.StreamReader, id_: int, lines: list[bytes]
) -> dict[str, Any]:
    while True:
        line = await asyncio.wait_for(stdout.readline(), LIMIT)
        assert line, "awaken acp closed stdout before answering"
        lines.append(line)
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == id_ and "method" not in message:
            return message


async def test_only_protocol_frames_reach_stdout(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with stderr.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            *awaken(),
            *acp_args(),
            cwd=HERE,
            env=agent_env(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
        )
        assert process.stdin is not None and process.stdout is not None
        lines: list[bytes] = []
        process.stdin.write(_frame(1, "initialize", {"protocolVersion": 1}))
        assert (await _until_response(process.stdout, 1, lines))["result"]["protocolVersion"] == 1
        process.stdin.write(_frame(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        session = (await _until_response(process.stdout, 2, lines))["result"]["sessionId"]
        prompt = [{"type": "text", "text": "make some noise"}]
        process.stdin.write(_frame(3, "session/prompt", {"sessionId": session, "prompt": prompt}))
        done = await _until_response(process.stdout, 3, lines)
        process.stdin.close()
        rest = await asyncio.wait_for(process.stdout.read(), LIMIT)
        assert await asyncio.wait_for(process.wait(), LIMIT) == 0
    assert done["result"] == {"stopReason": "end_turn"}
    lines += rest.splitlines(keepends=True)
    for line in lines:
        assert line.endswith(b"\n")
        assert json.loads(line)["jsonrpc"] == "2.0", line
    updates = [json.loads(x)["params"]["update"] for x in lines if b"session/update" in x]
    assert {"sessionUpdate": "tool_call_update"}.items() <= updates[1].items()
    assert updates[1]["rawOutput"] == "made noise"
    logged = stderr.read_text()
    for noise in ("SETUP-NOISE", "NOISE-FROM-A-TOOL", "MORE-NOISE", "RAW-FD-NOISE"):
        assert noise in logged
    assert "speaking ACP on stdio" in logged
