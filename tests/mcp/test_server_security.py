"""Attacks on ``awaken mcp serve``'s calls: borrowed threads, escaping names, forged answers.

The ``Calls`` object behind ``build_server`` is driven with callers of two
profiles (what two bearer keys become over HTTP), so each attack names whose
state it tries to reach and the test checks that nothing of it changed.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from mcp_setup import gated_setup

from awaken_mcp._calls import Caller, Calls
from awaken_mcp._direct import install
from awaken_mcp._owners import McpOwners
from awaken_mcp._server import plan_offer
from awaken_runtime import Runtime, ScopeBinding
from awaken_runtime.stores import open_store
from awaken_server import AgentCatalog, load_agent_files

GATED = Path(__file__).parent / "gated"


def text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    files, models = load_agent_files(str(GATED))
    rt = AgentCatalog(files=files, models=models, setup=gated_setup).build(
        open_store(f"sqlite:///{tmp_path / 'awaken.db'}")
    )
    install(rt)
    yield rt
    await rt.aclose()


def calls_of(runtime: Runtime, agents: list[str]) -> Calls:
    offer = plan_offer(runtime, agents, agents_as_tools=True)
    return Calls(runtime, offer.targets, {}, McpOwners(runtime.store), secrets.token_bytes(32))


def modern(profile: str) -> Caller:
    """A 2026-07-28 client that elicits (answers come back in a retry)."""
    return Caller(profile=profile, elicits=True, modern=True)


def call(
    name: str, args: dict[str, Any] | None = None, **extra: Any
) -> types.CallToolRequestParams:
    return types.CallToolRequestParams(name=name, arguments=args or {}, **extra)


async def parked_of(runtime: Runtime, thread: str, profile: str) -> Any:
    return (await runtime.store.load(ScopeBinding(thread, profile, "default"))).parked


async def test_another_keys_thread_is_refused_and_nothing_leaks(runtime: Runtime) -> None:
    calls = calls_of(runtime, ["helper"])
    plain = Caller(profile="alice")
    first = await calls.call(plain, call("helper", {"prompt": "shout secret-plan"}))
    assert first.is_error  # parked on the ask rule: the error names alice's thread
    thread = text(first).split("on thread '")[1].split("'")[0]
    before = await runtime.store.load(ScopeBinding(thread, "alice", "default"))
    stolen = await calls.call(
        Caller(profile="bob"), call("helper", {"prompt": "ask_name", "thread_id": thread})
    )
    unknown = await calls.call(
        Caller(profile="bob"), call("helper", {"prompt": "ask_name", "thread_id": "thread_nope"})
    )
    assert stolen.is_error and text(stolen) == f"thread {thread!r} does not exist"
    assert text(unknown) == "thread 'thread_nope' does not exist"  # the same words
    for leak in ("secret", "SECRET", "shout", "tkt_", "run_"):
        assert leak not in text(stolen)
    after = await runtime.store.load(ScopeBinding(thread, "alice", "default"))
    assert after.messages == before.messages and after.parked == before.parked


async def test_an_answer_for_a_ticket_the_caller_does_not_own_changes_nothing(
    runtime: Runtime,
) -> None:
    calls = calls_of(runtime, ["guarded"])
    asked = await calls.call(modern("alice"), call("shout", {"text": "hey"}))
    assert isinstance(asked, types.InputRequiredResult) and asked.request_state
    (key,) = list(asked.input_requests or {})
    yes = {key: types.ElicitResult(action="accept", content={"decision": "approve"})}
    state = asked.request_state
    pending = asked.request_state.split(".")[0]
    forged = [
        (modern("bob"), state),  # borrowed: another profile replays alice's state
        (modern("alice"), pending + "." + "0" * 64),  # a made-up signature
        (modern("alice"), pending[:-4] + "AAAA." + state.split(".")[1]),  # an edited body
        (modern("alice"), "not-a-state"),
    ]
    for caller, bad in forged:
        refused = await calls.call(
            caller, call("shout", {"text": "hey"}, request_state=bad, input_responses=yes)
        )
        assert isinstance(refused, types.CallToolResult) and refused.is_error, bad
        assert "request_state" in text(refused) and "HEY" not in text(refused)
    wrong_tool = await calls.call(
        modern("alice"), call("wipe", {"path": "x"}, request_state=state, input_responses=yes)
    )
    assert wrong_tool.is_error and "belongs to tool 'shout'" in text(wrong_tool)
    with pytest.raises(MCPError) as missing:
        await calls.call(
            modern("alice"), call("shout", {}, request_state=state, input_responses={})
        )
    assert missing.value.code == types.INVALID_PARAMS
    # Still waiting for alice, who answers it now.
    done = await calls.call(
        modern("alice"), call("shout", {"text": "hey"}, request_state=state, input_responses=yes)
    )
    assert isinstance(done, types.CallToolResult) and text(done) == "HEY!"
    again = await calls.call(
        modern("alice"), call("shout", {"text": "hey"}, request_state=state, input_responses=yes)
    )
    assert again.is_error and "not waiting any more" in text(again)  # a replay runs nothing


_OFFERED = {"shout", "ask_name", "helper"}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.one_of(
        st.sampled_from(
            [
                "add",
                "wipe",
                "media",
                "guarded",
                "agent_run",
                "../shout",
                "shout/../wipe",
                "helper__shout",
                "guarded__wipe",
                "shout ",
                " shout",
                "SHOUT",
                "shout\x00",
                "helper/ask_name",
                "",
                "__proto__",
                "tools/call",
            ]
        ),
        st.text(max_size=30),
    )
)
async def test_a_name_outside_the_offer_reaches_no_tool(runtime: Runtime, name: str) -> None:
    # Only helper is served: add, wipe and media are registered (guarded lists them) but
    # not offered; no spelling of a name reaches them or another agent.
    if name in _OFFERED:
        return
    calls = calls_of(runtime, ["helper"])
    before = await runtime.store.list_threads()  # type: ignore[attr-defined]
    result = await calls.call(Caller(profile="alice"), call(name, {"path": "/", "text": "x"}))
    assert (
        result.is_error
        and text(result) == f"unknown tool {name!r}; tools/list names the tools this server offers"
    )
    assert await runtime.store.list_threads() == before  # type: ignore[attr-defined]


async def test_no_error_escapes_with_code_zero(runtime: Runtime) -> None:
    calls = calls_of(runtime, ["helper"])
    first = await calls.call(Caller(profile="alice"), call("helper", {"prompt": "shout x"}))
    thread = text(first).split("on thread '")[1].split("'")[0]
    # The thread waits: a second call on it is ThreadBusy, which used to be code 0.
    busy = await calls.call(
        Caller(profile="alice"), call("helper", {"prompt": "ask_name", "thread_id": thread})
    )
    assert busy.is_error and "waiting" in text(busy)
    parked = await parked_of(runtime, thread, "alice")
    assert parked is not None and parked.run_id in text(first)  # still waiting, untouched

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the store fell over")

    runtime.run = broken  # type: ignore[method-assign]
    with pytest.raises(MCPError) as internal:
        await calls.call(Caller(profile="alice"), call("helper", {"prompt": "ask_name"}))
    assert internal.value.code == types.INTERNAL_ERROR and internal.value.code != 0
    assert "fell over" not in internal.value.message  # details stay in the server's log


async def test_two_retries_racing_with_one_answer_run_the_call_once(runtime: Runtime) -> None:
    calls = calls_of(runtime, ["guarded"])
    asked = await calls.call(modern("alice"), call("shout", {"text": "once"}))
    assert isinstance(asked, types.InputRequiredResult) and asked.request_state
    (key,) = list(asked.input_requests or {})
    yes = {key: types.ElicitResult(action="accept", content={"decision": "approve"})}
    retry = call("shout", {"text": "once"}, request_state=asked.request_state, input_responses=yes)
    results = await asyncio.gather(*(calls.call(modern("alice"), retry) for _ in range(4)))
    ran = [r for r in results if isinstance(r, types.CallToolResult) and not r.is_error]
    assert [text(r) for r in ran] == ["ONCE!"]
    for other in results:
        if other not in ran:
            assert isinstance(other, types.CallToolResult) and other.is_error
            assert "ONCE" not in text(other)
