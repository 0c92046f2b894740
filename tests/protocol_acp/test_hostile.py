"""``awaken acp`` facing clients that misbehave or race it: unknown sessions, cancelled
asks, cancels with nothing running, two prompts at once, a cancel racing an open ask."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp_rig import Recorder, cancelled, spawned


async def test_a_prompt_for_an_unknown_session_is_an_error_naming_the_fix(
    tmp_path: Path,
) -> None:
    async with spawned(Recorder(), tmp_path) as agent:
        with pytest.raises(RequestError) as raised:
            await agent.prompt("thread_nobody", "hello")
        # The connection stays usable after the error.
        session = await agent.session()
        assert await agent.prompt(session, "hello") == "end_turn"
    assert raised.value.code == -32002
    assert "unknown session 'thread_nobody'" in str(raised.value)
    assert "session/new" in str(raised.value)


async def test_loading_a_session_the_store_never_had_is_an_error(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'acp.db'}"
    async with spawned(Recorder(), tmp_path, store) as agent:
        with pytest.raises(RequestError) as raised:
            await agent.conn.load_session(cwd=str(tmp_path), session_id="thread_x", mcp_servers=[])
    assert raised.value.code == -32002 and "no such thread" in str(raised.value)


async def test_a_cancelled_permission_answer_runs_nothing_and_ends_the_turn_cancelled(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("x")

    async def cancel_it(recorder: Recorder, ask: dict[str, Any]) -> Any:
        return cancelled()

    recorder = Recorder(cancel_it)
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, f"delete {victim}") == "cancelled"
        assert victim.exists(), "a cancelled ask never runs the tool"
        [update] = recorder.of("tool_call_update")
        assert update["status"] == "failed"
        # The thread is not left waiting: the session takes the next prompt.
        assert await agent.prompt(session, "hello") == "end_turn"


async def test_session_cancel_while_an_ask_is_open_ends_the_prompt_even_unanswered(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("x")

    async def cancel_and_never_answer(recorder: Recorder, ask: dict[str, Any]) -> Any:
        assert recorder.conn is not None
        await recorder.conn.cancel(session_id=ask["sessionId"])
        await asyncio.Event().wait()  # a client that forgets to answer its ask

    recorder = Recorder(cancel_and_never_answer)
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, f"delete {victim}") == "cancelled"
        assert victim.exists()
        assert await agent.prompt(session, "hello") == "end_turn"


async def test_cancel_with_nothing_running_is_harmless(tmp_path: Path) -> None:
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        await agent.conn.cancel(session_id=session)  # idle session
        await agent.conn.cancel(session_id="thread_nobody")  # unknown session
        assert await agent.prompt(session, "hello") == "end_turn"
        assert await agent.prompt(session, "hello twice") == "end_turn"
    assert recorder.text() == "Hello! You said: helloHello! You said: hello twice"
    assert "session/cancel for unknown session 'thread_nobody'" in agent.stderr.read_text()


async def test_a_second_prompt_while_one_runs_is_refused_and_the_first_goes_on(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        first = asyncio.ensure_future(agent.prompt(session, "please wait"))
        await recorder.wait_for(lambda i: i.get("sessionUpdate") == "tool_call")
        with pytest.raises(RequestError) as raised:
            await agent.prompt(session, "me too")
        other = await agent.session()  # other sessions are not blocked
        assert await agent.prompt(other, "hello") == "end_turn"
        assert not first.done()
        await agent.conn.cancel(session_id=session)
        assert await first == "cancelled"
    assert raised.value.code == -32000
    assert "already running a prompt" in str(raised.value)
    assert "session/cancel" in str(raised.value)


async def test_a_failed_run_is_a_json_rpc_error_naming_the_failure(tmp_path: Path) -> None:
    async with spawned(Recorder(), tmp_path) as agent:
        session = await agent.session()
        with pytest.raises(RequestError) as raised:
            await agent.prompt(session, "explode")
        assert await agent.prompt(session, "hello") == "end_turn"
    assert raised.value.code == -32603
    assert "the run failed" in str(raised.value) and "the scripted model broke" in str(raised.value)


async def test_a_wait_acp_cannot_answer_ends_the_turn_with_a_note(tmp_path: Path) -> None:
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, "a question for you") == "end_turn"
        assert not [i for i in recorder.log if i.get("ask")]
        assert "waited for user input on ask_user" in recorder.text()
        assert recorder.of("tool_call_update")[-1]["status"] == "failed"
        recorder.clear()
        assert await agent.prompt(session, "hello") == "end_turn"
    assert recorder.text() == "Hello! You said: hello"
