"""The ``acp`` Python client (``spawn_agent_process``) driving ``awaken acp`` over stdio:
a prompt with a tool call, permission asks answered inside the prompt, cancels."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp_rig import LIMIT, Recorder, allow, spawned


async def test_initialize_says_what_the_agent_offers(tmp_path: Path) -> None:
    async with spawned(Recorder(), tmp_path) as agent:
        init = agent.initialized.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert init["protocolVersion"] == 1
    assert init["agentCapabilities"]["loadSession"] is True
    assert init["agentCapabilities"]["promptCapabilities"]["embeddedContext"] is True
    assert init["agentInfo"]["name"] == "awaken" and init["agentInfo"]["title"] == "assistant"
    assert init["authMethods"] == []


async def test_a_prompt_streams_text_chunks_and_a_tool_call_with_its_result(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, "what is the weather?") == "end_turn"
    assert recorder.text() == "Let me check.Result: sunny in Paris. All done."
    assert len(recorder.of("agent_message_chunk")) > 2, "text arrives in several chunks"
    [call] = recorder.of("tool_call")
    assert call["title"] == "get_weather(city='Paris')"
    assert call["status"] == "pending" and call["rawInput"] == {"city": "Paris"}
    [done] = recorder.of("tool_call_update")
    assert done["toolCallId"] == call["toolCallId"] and done["status"] == "completed"
    assert done["content"] == [
        {"type": "content", "content": {"type": "text", "text": "sunny in Paris"}}
    ]
    kinds = [i.get("sessionUpdate") for i in recorder.log]
    assert kinds.index("tool_call") < kinds.index("tool_call_update")
    assert all(i["sessionId"] == session for i in recorder.log)


async def test_an_allowed_ask_runs_the_tool_inside_the_same_prompt(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("x")
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, f"delete {victim}") == "end_turn"
    assert not victim.exists(), "allowed: the tool ran"
    [call] = recorder.of("tool_call")
    [ask] = [i for i in recorder.log if i.get("ask")]
    assert recorder.log.index(call) < recorder.log.index(ask), "the call is shown before the ask"
    assert ask["sessionId"] == session
    assert ask["toolCall"]["toolCallId"] == call["toolCallId"]
    assert ask["toolCall"]["title"] == f"delete_file(path='{victim}')"
    assert [o["kind"] for o in ask["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    statuses = [u["status"] for u in recorder.of("tool_call_update")]
    assert statuses == ["in_progress", "completed"]
    assert recorder.text() == f"Result: deleted {victim}. All done."


async def test_a_tool_that_asks_for_approval_itself_runs_once_allowed(tmp_path: Path) -> None:
    target = tmp_path / "deployed.txt"
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, f"deploy {target}") == "end_turn"
    assert target.read_text() == "deployed"
    [ask] = [i for i in recorder.log if i.get("ask")]
    assert ask["toolCall"]["rawInput"]["reason"] == f"deploy writes {target}"
    assert [u["status"] for u in recorder.of("tool_call_update")] == ["in_progress", "completed"]


async def test_a_rejected_ask_does_not_run_the_tool(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("x")

    async def reject(recorder: Recorder, ask: dict[str, Any]) -> Any:
        return allow("reject_once")

    recorder = Recorder(reject)
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, f"delete {victim}") == "end_turn"
    assert victim.exists(), "rejected: the tool never ran"
    [update] = recorder.of("tool_call_update")
    assert update["status"] == "failed"
    assert "rejected by the user" in recorder.text()


async def test_allow_always_is_remembered_for_the_same_call_in_the_session(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"

    async def always(recorder: Recorder, ask: dict[str, Any]) -> Any:
        return allow("allow_always")

    recorder = Recorder(always)
    async with spawned(recorder, tmp_path) as agent:
        session, other = await agent.session(), await agent.session()
        for on in (session, session, other):
            victim.write_text("x")
            assert await agent.prompt(on, f"delete {victim}") == "end_turn"
            assert not victim.exists()
    asks = [i for i in recorder.log if i.get("ask")]
    # The permissions plugin remembers exactly this call, in this session's thread.
    assert [a["sessionId"] for a in asks] == [session, other]


async def test_cancel_stops_a_running_tool_and_the_session_goes_on(tmp_path: Path) -> None:
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        running = asyncio.ensure_future(agent.prompt(session, "please wait"))
        await recorder.wait_for(lambda i: i.get("sessionUpdate") == "tool_call")
        await agent.conn.cancel(session_id=session)
        assert await running == "cancelled"
        [call] = recorder.of("tool_call")
        last = recorder.of("tool_call_update")[-1]
        assert last["toolCallId"] == call["toolCallId"] and last["status"] == "failed"
        recorder.clear()
        assert await agent.prompt(session, "hello again") == "end_turn"
    assert recorder.text() == "Hello! You said: hello again"


async def test_reasoning_streams_as_thought_chunks(tmp_path: Path) -> None:
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, "think about it") == "end_turn"
    thought = "".join(i["content"]["text"] for i in recorder.of("agent_thought_chunk"))
    assert thought == "Pondering the question."
    assert recorder.text() == "I thought about it."


async def test_a_session_in_a_persistent_store_loads_in_a_new_process(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'acp.db'}"
    recorder = Recorder()
    async with spawned(recorder, tmp_path, store) as agent:
        session = await agent.session()
        assert await agent.prompt(session, "what is the weather?") == "end_turn"
    recorder.clear()
    async with spawned(recorder, tmp_path, store) as agent:
        await asyncio.wait_for(
            agent.conn.load_session(cwd=str(tmp_path), session_id=session, mcp_servers=[]), LIMIT
        )
        replayed = [i.get("sessionUpdate") for i in recorder.log]
        assert replayed == [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        assert recorder.log[0]["content"]["text"] == "what is the weather?"
        recorder.clear()
        assert await agent.prompt(session, "hello again") == "end_turn"
    assert recorder.text() == "Hello! You said: hello again"


async def test_a_scheduled_call_runs_when_due_within_the_prompt(tmp_path: Path) -> None:
    recorder = Recorder()
    async with spawned(recorder, tmp_path) as agent:
        session = await agent.session()
        assert await agent.prompt(session, "later 0.2") == "end_turn"
        assert recorder.text() == "Result: ran later. All done."
        recorder.clear()
        running = asyncio.ensure_future(agent.prompt(session, "later 600"))
        await recorder.wait_for(lambda i: i.get("sessionUpdate") == "tool_call")
        await agent.conn.cancel(session_id=session)
        assert await running == "cancelled"
    assert recorder.of("tool_call_update")[-1]["status"] == "failed"
    assert "ran later" not in recorder.text()
