"""Every stdio server process the client starts is ended: on failure, on aclose, at exit.

Hung (never answer the handshake; one ignores SIGTERM and has a child), crashing
(exit status 7 after writing to stderr) and garbage-writing servers, over 20 runs;
each pid they report is checked in /proc. Results over ``max_result_bytes`` and
non-JSON-RPC output mid-call are typed errors that leave the connection usable.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp_rig import HERE, ScriptedTurn, build, toy_server

from awaken_mcp import McpServerConfig, McpUnavailable, _reaper
from awaken_runtime import Message, Phase, Runtime

BROKEN = str(HERE / "broken_server.py")

EXPECT = {
    "hang": r"no answer within 0.5 s.*hang: listening, never answering",
    "stubborn": r"no answer within 0.5 s.*stubborn: listening",
    "crash": r"exit status 7.*fatal: no such config file /etc/broken.toml",
    "garbage": r"not JSON-RPC to stdout \('Welcome to the broken server! v1.0'\)",
}


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, reaped or not, does not)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def broken(mode: str, pids: Path, index: int) -> McpServerConfig:
    return McpServerConfig(
        id=f"b{index}",
        transport="stdio",
        command=sys.executable,
        args=[BROKEN, mode],
        env={"BROKEN_PIDS": str(pids)},
        connect_timeout=0.5 if mode in ("hang", "stubborn") else 20,
        stop_grace=0.2,
    )


async def test_hung_and_crashing_servers_leave_no_process_over_20_runs(tmp_path: Path) -> None:
    modes = ["hang", "stubborn", "crash", "garbage"]
    runtimes: list[Runtime] = []
    for i in range(20):
        mode = modes[i % len(modes)]
        pids = tmp_path / f"pids{i}"
        pids.touch()
        rt = build(["never"], [broken(mode, pids, i)])
        runtimes.append(rt)
        for _attempt in range(1 + i % 2):  # every other runtime fails twice (a restart)
            with pytest.raises(McpUnavailable) as raised:
                await rt.run("a", "hi")
            message = str(raised.value)
            assert f"'b{i}'" in message and "did not start" in message
            assert "ExceptionGroup" not in message and "TaskGroup" not in message, message
            assert re.search(EXPECT[mode], message), (mode, message)
        started = [int(p) for p in pids.read_text().split()]
        assert started, f"{mode}: the server never started"
        # Ended on failure already, before any aclose.
        assert [p for p in started if alive(p)] == [], (mode, started)
        if i % 3 == 0:
            await rt.aclose()
    for rt in runtimes:
        await rt.aclose()
    every = [int(p) for f in tmp_path.glob("pids*") for p in f.read_text().split()]
    assert len(every) >= 20
    assert [p for p in every if alive(p)] == []
    assert not (_reaper.live() & set(every))


async def tool_messages(state: object) -> list[Message]:
    return [m for m in state.new_messages if m.role == "tool"]  # type: ignore[attr-defined]


async def test_an_oversized_result_is_refused_and_the_connection_goes_on(
    marks: Path, closing: list[Runtime]
) -> None:
    rt = build(
        [
            ScriptedTurn.call("toy__huge", {"megabytes": 3}),
            ScriptedTurn.call("toy__pid", {}),
            ScriptedTurn.call("toy__huge", {"megabytes": 0.3}),
            ScriptedTurn.call("toy__echo", {"text": "after"}),
            "ok",
        ],
        [toy_server(marks, max_result_bytes=1024 * 1024, timeout=30)],
    )
    closing.append(rt)
    state = await rt.run("a", "big", thread_id="big")
    assert state.phase is Phase.ENDED and state.final_text == "ok"
    refused, first_pid, fits, echo = await tool_messages(state)
    assert refused.metadata["is_error"]
    assert "returned too much" in refused.text and "max_result_bytes=1048576" in refused.text
    assert not first_pid.metadata.get("is_error"), first_pid.text
    # 0.3 MB fits: the server sends it twice (text and structured content).
    assert len(fits.text) == int(0.3 * 1024 * 1024) and not fits.metadata.get("is_error")
    assert echo.text == "echo: after"
    plugin = rt.registries.plugins["mcp"]
    (conn,) = plugin.connections(rt)  # type: ignore[attr-defined]
    assert conn.restarts == 0 and conn.status == "connected", "the same connection went on"


async def test_garbage_on_stdout_mid_call_is_a_typed_error_and_the_server_restarts(
    marks: Path, closing: list[Runtime]
) -> None:
    rt = build(
        [
            ScriptedTurn.call("toy__garbage", {}),
            ScriptedTurn.call("toy__echo", {"text": "again"}),
            "ok",
        ],
        [toy_server(marks, timeout=120, stop_grace=0.2)],
    )
    closing.append(rt)
    state = await rt.run("a", "garbage", thread_id="g")
    bad, echo = await tool_messages(state)
    assert bad.metadata["is_error"]
    assert "not JSON-RPC to stdout ('DEBUG: this line is not JSON-RPC')" in bad.text, bad.text
    assert "outcome is unknown" in bad.text
    assert echo.text == "echo: again"
    first = int(marks.read_text().split("garbage ")[1].split()[0])
    assert not alive(first), "the server that wrote garbage was ended"


SCRIPT = """
import asyncio, sys
sys.path.insert(0, {here!r})
from mcp_rig import ScriptedTurn, build, toy_server
from awaken_mcp import McpServerConfig
from pathlib import Path

async def main():
    rt = build([ScriptedTurn.call("toy__pid", {{}}), "ok"], [toy_server(Path({marks!r}))])
    state = await rt.run("a", "pid", thread_id="x")
    print([m.text for m in state.new_messages if m.role == "tool"][0], flush=True)
    hung = McpServerConfig(id="h", transport="stdio", command=sys.executable,
                           args=[{broken!r}, "stubborn"], env={{"BROKEN_PIDS": {pids!r}}},
                           connect_timeout=600)
    rt2 = build(["x"], [hung])
    task = asyncio.create_task(rt2.run("a", "hi"))
    while not Path({pids!r}).read_text().count("\\n") >= 2:
        await asyncio.sleep(0.05)
    {ending}

asyncio.run(main())
"""


@pytest.mark.parametrize("ending", ["return", "sys.exit(3)"])
async def test_servers_end_at_interpreter_exit_without_aclose(
    tmp_path: Path, marks: Path, ending: str
) -> None:
    pids = tmp_path / "pids"
    pids.touch()
    script = SCRIPT.format(
        here=str(HERE), marks=str(marks), broken=BROKEN, pids=str(pids), ending=ending
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TOY_MARKS": str(marks)},
    )
    assert done.stdout.strip(), done.stderr
    started = [int(done.stdout.split()[0]), *(int(p) for p in pids.read_text().split())]
    assert len(started) == 3  # the toy server, the stubborn one and its child
    assert [p for p in started if alive(p)] == [], (started, done.stderr[-2000:])
    assert json.dumps(started)
