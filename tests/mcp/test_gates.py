"""Policy over MCP: direct tools run through their agent's gates, tickets are asked.

Driven by the official Python SDK client in process, both ways it talks: the
handshake era (``mode="legacy"``: the server asks with ``elicitation/create``
while the call is open) and 2026-07-28 (the call answers ``InputRequiredResult``
and the client's retry carries the answer). The TypeScript SDK over stdio and
HTTP, and the REST route, are in ``test_gates_ts.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp_setup import gated_setup

from awaken_mcp import build_server
from awaken_mcp._server import plan_offer
from awaken_runtime import Runtime, ScopeBinding
from awaken_runtime.stores import open_store
from awaken_server import AgentCatalog, load_agent_files
from mcp import Client

GATED = Path(__file__).parent / "gated"


def text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    files, models = load_agent_files(str(GATED))
    catalog = AgentCatalog(files=files, models=models, setup=gated_setup)
    rt = catalog.build(open_store(f"sqlite:///{tmp_path / 'awaken.db'}"))
    yield rt
    await rt.aclose()


class Answers:
    """An elicitation callback answering from a list, recording what it was asked."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return self.answers.pop(0)


def approve(**extra: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "approve", **extra})


def deny(reason: str) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "deny", "reason": reason})


MODES = ["legacy", "auto"]  # handshake era (elicitation/create), 2026-07-28 (InputRequiredResult)


async def test_tools_without_a_gate_are_not_served_unless_asked(runtime: Runtime) -> None:
    offer = plan_offer(runtime, ["helper"])  # helper has a gate: its tools are served
    assert set(offer.targets) == {"shout", "ask_name"}
    from awaken_runtime import AgentConfig

    runtime.registries.agents["bare"] = AgentConfig(
        id="bare", model_binding="echo-model", tool_ids=["add"]
    )
    assert plan_offer(runtime, ["bare"]).skipped == ["add"]
    ungated = plan_offer(runtime, ["bare"], tools_ungated=True)
    assert set(ungated.ungated) == {"add"} and not ungated.targets
    # A gated agent listing the same tool wins over the bare one.
    assert plan_offer(runtime, ["bare", "guarded"], tools_ungated=True).targets["add"].agent == (
        "guarded"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_deny_rule_refuses_the_call_naming_the_rule(runtime: Runtime, mode: str) -> None:
    server = build_server(runtime, ["guarded"])
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        refused = await client.call_tool("wipe", {"path": "/etc"})
        assert refused.is_error
        assert 'deny wipe(path ~ "/*")' in text(refused) and "wiped" not in text(refused)
        allowed = await client.call_tool("wipe", {"path": "tmp/x"})
        assert not allowed.is_error and text(allowed) == "wiped tmp/x"
        # Denied outright: hidden from the listing as from the agent's model, and a call
        # is still refused naming the rule.
        assert "erase" not in {t.name for t in (await client.list_tools()).tools}
        erased = await client.call_tool("erase", {"path": "tmp/x"})
        assert erased.is_error and "'deny erase'" in text(erased) and "erased" not in text(erased)


@pytest.mark.parametrize("mode", MODES)
async def test_an_ask_rule_is_elicited_then_runs_or_not(runtime: Runtime, mode: str) -> None:
    answers = Answers(approve(), deny("not today"), types.ElicitResult(action="decline"))
    server = build_server(runtime, ["guarded"])
    async with Client(server, mode=mode, elicitation_callback=answers) as client:  # type: ignore[arg-type]
        ran = await client.call_tool("shout", {"text": "hey"})
        assert not ran.is_error and text(ran) == "HEY!"
        shown = answers.asked[0]
        assert isinstance(shown, types.ElicitRequestFormParams)
        assert "'shout'" in shown.message and '{"text": "hey"}' in shown.message
        assert shown.requested_schema["properties"]["decision"]["enum"] == ["approve", "deny"]
        denied = await client.call_tool("shout", {"text": "no"})
        assert denied.is_error and "not today" in text(denied) and "NO!" not in text(denied)
        declined = await client.call_tool("shout", {"text": "no"})
        assert declined.is_error and "declined" in text(declined)
    assert len(answers.asked) == 3


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_elicit_is_told_how_to_enable_it(
    runtime: Runtime, mode: str
) -> None:
    server = build_server(runtime, ["guarded"])
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        refused = await client.call_tool("shout", {"text": "hey"})
    assert refused.is_error
    assert "elicitation" in text(refused) and "Nothing ran" in text(refused)
    assert "HEY" not in text(refused)


async def test_the_direct_call_is_a_run_with_its_audit_record(runtime: Runtime) -> None:
    server = build_server(runtime, ["guarded"])
    async with Client(server, mode="legacy", elicitation_callback=Answers(approve())) as client:  # type: ignore[arg-type]
        assert text(await client.call_tool("shout", {"text": "log"})) == "LOG!"
    # The run left its thread in the store: the given turn, the call, its result.
    threads = await runtime.store.list_threads()  # type: ignore[attr-defined]
    assert threads, "the direct call ran on a thread of the store"


@pytest.mark.parametrize("mode", MODES)
async def test_audio_and_file_parts_arrive_intact(runtime: Runtime, mode: str) -> None:
    from mcp_setup import PDF_B64, WAV_B64

    server = build_server(runtime, ["guarded"])
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool("media", {})
    kinds = [b.type for b in result.content]
    assert kinds == ["text", "audio", "resource"]
    audio, resource = result.content[1], result.content[2]
    assert isinstance(audio, types.AudioContent) and audio.data == WAV_B64
    assert audio.mime_type == "audio/wav"
    assert isinstance(resource, types.EmbeddedResource)
    blob = resource.resource
    assert isinstance(blob, types.BlobResourceContents) and blob.blob == PDF_B64
    assert blob.mime_type == "application/pdf" and str(blob.uri).endswith("report.pdf")


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_that_parks_is_answered_in_the_same_call(
    runtime: Runtime, mode: str
) -> None:
    answers = Answers(approve(), types.ElicitResult(action="accept", content={"name": "Ada"}))
    server = build_server(runtime, ["guarded", "helper"], agents_as_tools=True)
    async with Client(server, mode=mode, elicitation_callback=answers) as client:  # type: ignore[arg-type]
        shouted = await client.call_tool("helper", {"prompt": "shout hello"})
        assert not shouted.is_error and text(shouted) == "done: HELLO!"
        named = await client.call_tool("helper", {"prompt": "ask_name"})
        assert not named.is_error and json.loads(text(named).removeprefix("done: ")) == {
            "name": "Ada"
        }
    question = answers.asked[1]
    assert isinstance(question, types.ElicitRequestFormParams)
    assert question.message == "What is your name?"
    assert question.requested_schema["properties"]["name"]["type"] == "string"


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_parked_for_a_client_that_cannot_elicit_names_the_rest_route(
    runtime: Runtime, mode: str
) -> None:
    server = build_server(runtime, ["helper"], agents_as_tools=True)
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        parked = await client.call_tool("helper", {"prompt": "shout hi"})
    assert parked.is_error
    words = text(parked)
    assert "POST /v1/runs/run_" in words and "/resume" in words and "thread_" in words


@pytest.mark.parametrize("answer", ["error", "raise"])
async def test_a_failed_elicitation_runs_nothing_and_leaves_no_run_waiting(
    runtime: Runtime, answer: str
) -> None:
    async def broken(context: Any, params: types.ElicitRequestParams) -> Any:
        if answer == "raise":
            raise RuntimeError("the client's form crashed")
        return types.ErrorData(code=types.INVALID_REQUEST, message="no user at the keyboard")

    server = build_server(runtime, ["guarded", "helper"], agents_as_tools=True)
    async with Client(server, mode="legacy", elicitation_callback=broken) as client:  # type: ignore[arg-type]
        direct = await client.call_tool("shout", {"text": "hey"})
        agent = await client.call_tool("helper", {"prompt": "shout hey"})
    assert direct.is_error and "did not answer the elicitation" in text(direct)
    assert "Nothing ran" in text(direct) and "HEY" not in text(direct)
    # The agent's run waits for an answer through REST; the direct call's run is gone.
    assert agent.is_error and "/resume" in text(agent) and "did not answer" in text(agent)
    waiting = []
    for info in await runtime.store.list_threads():  # type: ignore[attr-defined]
        snapshot = await runtime.store.load(ScopeBinding(info.thread_id, "default", "default"))
        if snapshot.parked is not None:
            waiting.append(snapshot.parked.agent_id)
    assert waiting == ["helper"]


@pytest.mark.parametrize("mode", MODES)
async def test_concurrent_asks_on_one_connection_get_their_own_answers(
    runtime: Runtime, mode: str
) -> None:
    async def by_call(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        await asyncio.sleep(0.01)  # both forms are open at once
        wanted = '"yes' in params.message
        return approve() if wanted else deny("that one, no")

    server = build_server(runtime, ["guarded"])
    async with Client(server, mode=mode, elicitation_callback=by_call) as client:  # type: ignore[arg-type]
        results = await asyncio.gather(
            *(
                client.call_tool("shout", {"text": f"{w}{i}"})
                for i in range(3)
                for w in ("yes", "no")
            )
        )
    for i, result in enumerate(results):
        if i % 2 == 0:
            assert not result.is_error and text(result) == f"YES{i // 2}!"
        else:
            assert result.is_error and "that one, no" in text(result)
