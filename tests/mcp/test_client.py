"""MCP servers as a tool source: real servers over stdio and HTTP, in scripted runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_rig import TOY, ScriptedTurn, build, time_server, toy_server, wait_listening

from awaken_mcp import McpPlugin, McpServerConfig, McpUnavailable
from awaken_runtime import (
    CancellationToken,
    Cancelled,
    Message,
    Phase,
    ResumeRejected,
    Runtime,
)
from awaken_runtime.stores import ScopeBinding


async def tool_messages(rt: Runtime, thread_id: str) -> list[Message]:
    snap = await rt.store.load(ScopeBinding(thread_id, "default", "default"))
    return [m for m in snap.messages if m.role == "tool"]


def connection(rt: Runtime, server_id: str) -> Any:
    plugin = rt.registries.plugins["mcp"]
    assert isinstance(plugin, McpPlugin)
    return next(c for c in plugin.connections(rt) if c.config.id == server_id)


async def until(check: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_agent_uses_mcp_server_time_over_stdio(closing: list[Runtime]) -> None:
    rt = build(
        [
            ScriptedTurn.call("time__get_current_time", {"timezone": "Europe/Paris"}),
            ScriptedTurn.call(
                "time__convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            ),
            "done",
        ],
        [time_server()],
    )
    closing.append(rt)
    snapshot = await rt.aresolve("a")
    ids = {t.id for t in snapshot.tools}
    assert ids == {"time__get_current_time", "time__convert_time"}
    get = next(t for t in snapshot.tools if t.id == "time__get_current_time")
    assert "timezone" in get.parameters["properties"]
    assert get.description  # the server's own description
    state = await rt.run("a", "what time is it in Paris?", thread_id="t1")
    assert state.phase is Phase.ENDED and state.final_text == "done"
    now, converted = await tool_messages(rt, "t1")
    assert not now.metadata.get("is_error"), now.content
    body = json.loads(now.text)
    assert body["timezone"] == "Europe/Paris" and "T" in body["datetime"]
    assert json.loads(converted.text)["target"]["datetime"].endswith("21:00:00+09:00")
    # The listing is shared: a second run reuses the same connection and tools.
    again = await rt.run("a", "again", thread_id="t2")
    assert again.phase is Phase.ENDED
    assert connection(rt, "time").restarts == 0


async def test_results_map_errors_images_and_filters(closing: list[Runtime], marks: Path) -> None:
    rt = build(
        [
            ScriptedTurn.call("toy__fail", {"reason": "no"}),
            ScriptedTurn.call("toy__picture", {}),
            ScriptedTurn.call("toy__chart", {}),
            ScriptedTurn.call("toy__echo", {"text": 5}),  # a schema error, the server's words
            "ok",
        ],
        [toy_server(marks, deny=["crash", "slow", "gr*", "book", "huge", "garbage"])],
    )
    closing.append(rt)
    ids = {t.id for t in (await rt.aresolve("a")).tools}
    assert ids == {"toy__echo", "toy__fail", "toy__picture", "toy__pid", "toy__chart"}
    await rt.run("a", "go", thread_id="r")
    failed, picture, chart, bad_args = await tool_messages(rt, "r")
    # An image first: no empty text block before it, and the caption stays after it.
    assert isinstance(chart.content, list)
    assert [(p.type, p.text) for p in chart.content] == [("image_url", None), ("text", "fig. 1")]
    assert failed.metadata["is_error"] and "refused: no" in failed.text
    assert isinstance(picture.content, list)
    text, image = picture.content
    assert text.text == "a red dot"
    assert image.type == "image_url"
    assert image.model_extra["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert bad_args.metadata["is_error"]


async def test_a_crash_mid_call_is_a_model_visible_error_and_the_server_restarts(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build(
        [
            ScriptedTurn.call("toy__pid", {}),
            ScriptedTurn.call("toy__crash", {}),
            ScriptedTurn.call("toy__pid", {}),
            "survived",
        ],
        [toy_server(marks)],
    )
    closing.append(rt)
    state = await rt.run("a", "crash it", thread_id="c")
    assert state.phase is Phase.ENDED and state.final_text == "survived"
    before, crashed, after = await tool_messages(rt, "c")
    assert crashed.metadata["is_error"]
    assert "failed during the call to 'crash'" in crashed.text
    assert "outcome is unknown" in crashed.text
    assert not after.metadata.get("is_error"), after.text
    assert before.text != after.text, "a new server process answered"
    assert f"crash {before.text}" in marks.read_text()
    conn = connection(rt, "toy")
    assert conn.restarts == 1 and conn.status == "connected"


async def test_a_changed_tool_list_refreshes_the_catalog_and_rejects_old_tickets(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build(
        [
            ScriptedTurn.call("toy__echo", {"text": "hi"}),  # asks: parks
            ScriptedTurn.call("toy__grow", {}),
            "grown",
        ],
        [toy_server(marks)],
        plugin_ids=["permissions"],
        plugin_config={"permissions": {"allow": ["toy__grow"], "default": "ask"}},
    )
    closing.append(rt)
    before = await rt.aresolve("a")
    assert "toy__extra" not in {t.id for t in before.tools}
    parked = await rt.run("a", "echo", thread_id="p")
    assert parked.phase is Phase.WAITING and parked.tickets
    grown = await rt.run("a", "grow", thread_id="g")
    assert grown.final_text == "grown"
    conn = connection(rt, "toy")
    await until(lambda: conn.changes > 0, "the tool-list change")
    after = await rt.aresolve("a")
    assert "toy__extra" in {t.id for t in after.tools}
    assert after.fingerprint != before.fingerprint
    with pytest.raises(ResumeRejected, match="changed since the run parked"):
        from awaken_runtime import Approve

        await rt.resume(parked.tickets[0], Approve())


async def test_cancelling_a_run_cancels_the_mcp_call_in_flight(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build([ScriptedTurn.call("toy__slow", {"seconds": 60}), "never"], [toy_server(marks)])
    closing.append(rt)
    cancel = CancellationToken()
    run = asyncio.create_task(rt.run("a", "wait", thread_id="s", cancel=cancel))
    await until(lambda: "slow started" in marks.read_text(), "the slow call to start")
    cancel.cancel("user stop")
    state = await asyncio.wait_for(run, 20)
    assert isinstance(state.end_cause, Cancelled), state.end_cause
    await until(lambda: "slow cancelled" in marks.read_text(), "the server to see the cancel")
    assert "slow finished" not in marks.read_text()


async def test_a_call_past_its_timeout_is_an_error_and_is_cancelled_on_the_server(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build(
        [ScriptedTurn.call("toy__slow", {"seconds": 60}), "after"],
        [toy_server(marks, timeout=0.5)],
    )
    closing.append(rt)
    state = await rt.run("a", "wait", thread_id="to")
    assert state.final_text == "after"
    (out,) = await tool_messages(rt, "to")
    assert out.metadata["is_error"] and "timed out after 0.5 s" in out.text
    await until(lambda: "slow cancelled" in marks.read_text(), "the server to see the cancel")


async def test_a_permission_deny_blocks_and_hides_an_mcp_tool(
    closing: list[Runtime], marks: Path
) -> None:
    seen: list[set[str]] = []

    def model(request: Any) -> Any:
        seen.append({t.id for t in request.tools})
        if len(seen) == 1:
            return ScriptedTurn.call("toy__crash", {})
        return "stopped"

    rt = build(
        [model, model],
        [toy_server(marks)],
        plugin_ids=["permissions"],
        plugin_config={"permissions": {"deny": ["toy__crash"], "default": "allow"}},
    )
    closing.append(rt)
    state = await rt.run("a", "crash it", thread_id="d")
    assert state.final_text == "stopped"
    assert "toy__crash" not in seen[0] and "toy__echo" in seen[0]
    (blocked,) = await tool_messages(rt, "d")
    assert blocked.metadata["is_error"] and "toy__crash" in blocked.text
    assert "crash" not in marks.read_text(), "the denied call never reached the server"


async def test_an_unstartable_server_names_itself(closing: list[Runtime], tmp_path: Path) -> None:
    broken = McpServerConfig(
        id="ghost", transport="stdio", command=str(tmp_path / "no-such-server"), connect_timeout=5
    )
    rt = build(["x"], [broken])
    closing.append(rt)
    with pytest.raises(McpUnavailable, match=r"'ghost'.*did not start"):
        await rt.run("a", "hi")
    assert connection(rt, "ghost").status.startswith("failed")


async def test_agent_file_servers_and_shutdown_ends_the_process(
    closing: list[Runtime], marks: Path
) -> None:
    server = toy_server(marks).model_dump(mode="json")
    rt = build(
        [ScriptedTurn.call("file__pid", {}), "ok"],
        [],
        plugin_config={"mcp": {"servers": [{**server, "id": "file"}]}},
    )
    await rt.run("a", "pid", thread_id="f")
    (out,) = await tool_messages(rt, "f")
    pid = int(out.text)
    os.kill(pid, 0)  # alive while the runtime is
    await rt.aclose()
    await until(lambda: not _alive(pid), "the server process to exit", timeout=10)
    assert connection_status_after_close(rt) == []


def connection_status_after_close(rt: Runtime) -> list[Any]:
    plugin = rt.registries.plugins["mcp"]
    assert isinstance(plugin, McpPlugin)
    return plugin.connections(rt)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # reap it if it is our child
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_http_server_with_headers(closing: list[Runtime], marks: Path) -> None:
    port = _free_port()
    key = "toy-key-0123456789"
    proc = subprocess.Popen(
        [sys.executable, TOY, "--http", str(port), key],
        env={**os.environ, "TOY_MARKS": str(marks)},
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_listening(port, "the toy HTTP server")
        good = McpServerConfig(
            id="web", transport="http", url=url, headers={"X-Toy-Key": key}, allow=["echo"]
        )
        rt = build([ScriptedTurn.call("web__echo", {"text": "over http"}), "ok"], [good])
        closing.append(rt)
        assert {t.id for t in (await rt.aresolve("a")).tools} == {"web__echo"}
        await rt.run("a", "go", thread_id="h")
        (out,) = await tool_messages(rt, "h")
        assert out.text == "echo: over http"
        bad = McpServerConfig(id="web", transport="http", url=url, connect_timeout=5)
        denied = build(["x"], [bad])
        closing.append(denied)
        with pytest.raises(McpUnavailable, match="'web'"):
            await denied.run("a", "go")
    finally:
        proc.kill()
        proc.wait(10)


async def test_a_runtime_dropped_without_aclose_does_not_leave_its_server_running(
    marks: Path,
) -> None:
    import gc

    rt = build([ScriptedTurn.call("toy__pid", {}), "ok"], [toy_server(marks)])
    state = await rt.run("a", "pid", thread_id="o")
    (out,) = [m for m in state.new_messages if m.role == "tool"]
    pid = int(out.text)
    del rt, state
    gc.collect()
    await until(lambda: not _alive(pid), "the orphaned server to exit", timeout=15)


JS = Path(__file__).parent / "js"


async def test_a_handshake_era_typescript_server_and_its_list_changed_notification(
    closing: list[Runtime],
) -> None:
    import shutil

    from awaken_runtime import Respond

    if not (JS / "node_modules").is_dir() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node or tests/mcp/js/node_modules missing: .ci/run must `npm ci` them")
        pytest.skip("run `npm ci --prefix tests/mcp/js` (needs Node 20) for the TS server test")
    ts = McpServerConfig(
        id="ts", transport="stdio", command="node", args=[str(JS / "toy_server.mjs")]
    )
    rt = build(
        [
            ScriptedTurn.call("ts__hello", {"name": "awaken"}),
            ScriptedTurn.call("ts__ask", {}),
            ScriptedTurn.call("ts__grow", {}),
            "grown",
            ScriptedTurn.call("ts__later", {}),
            "done",
        ],
        [ts],
    )
    closing.append(rt)
    before = await rt.aresolve("a")
    assert {t.id for t in before.tools} == {"ts__hello", "ts__ask", "ts__grow"}
    parked = await rt.run("a", "hello", thread_id="ts1")
    # A handshake-era elicitation (elicitation/create on the open call) parks the run
    # for the user; the answer goes back to the server on the same call.
    assert parked.phase is Phase.WAITING, parked.end_cause
    (ticket,) = parked.tickets
    form = ticket.payload["requests"]["elicitation"]
    assert form["message"] == "Your name?" and form["mode"] == "form"
    first = await rt.resume(ticket, Respond(value={"name": "ada"}))
    assert first.phase is Phase.ENDED, first.end_cause
    snapshot = await rt.store.load(ScopeBinding("ts1", "default", "default"))
    hello, asked, grow = [m for m in snapshot.messages if m.role == "tool"]
    assert hello.text == "hello, awaken" and grow.text == "grown"
    assert asked.text == "answered accept" and not asked.metadata.get("is_error")
    conn = connection(rt, "ts")
    await until(lambda: conn.changes > 0, "notifications/tools/list_changed")
    second = await rt.run("a", "later", thread_id="ts2")
    (later,) = [m for m in second.new_messages if m.role == "tool"]
    assert later.text == "here now"
    assert (await rt.aresolve("a")).fingerprint != before.fingerprint


async def test_an_elicitation_suspends_the_run_for_user_input_and_the_answer_reaches_the_server(
    closing: list[Runtime], marks: Path
) -> None:
    from awaken_runtime import ANSWER_TO_TOOL, AwaitReason, Respond

    rt = build([ScriptedTurn.call("toy__book", {"city": "Paris"}), "booked"], [toy_server(marks)])
    closing.append(rt)
    parked = await rt.run("a", "book a table", thread_id="e")
    assert parked.phase is Phase.WAITING
    (ticket,) = parked.tickets
    assert ticket.await_reason is AwaitReason.USER_INPUT
    form = ticket.payload["requests"]["party"]
    assert form["message"] == "How many people in Paris?"
    assert form["requested_schema"]["required"] == ["people"]
    assert ticket.payload[ANSWER_TO_TOOL] is True and ticket.payload["mcp_server"] == "toy"
    done = await rt.resume(ticket, Respond(value={"people": 4}))
    assert done.phase is Phase.ENDED and done.final_text == "booked"
    (result,) = [m for m in done.new_messages if m.role == "tool"]
    assert result.text == "booked for 4 in Paris"
    assert marks.read_text().count("book asked Paris") == 2  # asked, then answered on the retry


async def test_a_declined_elicitation_is_a_denied_call(closing: list[Runtime], marks: Path) -> None:
    from awaken_runtime import Deny

    rt = build([ScriptedTurn.call("toy__book", {"city": "Rome"}), "ok"], [toy_server(marks)])
    closing.append(rt)
    parked = await rt.run("a", "book", thread_id="e2")
    done = await rt.resume(parked.tickets[0], Deny(reason="the user declined"))
    (result,) = [m for m in done.new_messages if m.role == "tool"]
    assert result.metadata["is_error"] and "the user declined" in result.text
