"""Stock ``ctx.elicit`` tools of a real ``mcp`` 2.x server, answered through awaken tickets.

The server (``elicit_server.py``) asks with ``elicitation/create`` while its call is
open; the run parks with a USER_INPUT ticket, the call stays open, and the answer
given to ``Runtime.resume`` goes back to the server on that same call. Over stdio
and session-ful streamable HTTP; with two calls in flight on one connection; with
a server killed while its question waits; with a question nobody answers in time.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_rig import HERE, ScriptedTurn, build, wait_listening
from test_client import _free_port, connection, until

from awaken_mcp import McpServerConfig
from awaken_runtime import Phase, Respond, RunState, Runtime

ELICIT = str(HERE / "elicit_server.py")
PARTY = {"people"}


def stdio(marks: Path, **kw: Any) -> McpServerConfig:
    return McpServerConfig(
        id="el",
        transport="stdio",
        command=sys.executable,
        args=[ELICIT],
        env={"TOY_MARKS": str(marks)},
        stop_grace=0.3,
        **kw,
    )


@pytest.fixture
def http_server(marks: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, ELICIT, "--http", str(port)],
        env={**os.environ, "TOY_MARKS": str(marks)},
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, "the elicit HTTP server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)


def tools_of(state: RunState) -> list[str]:
    return [m.text for m in state.new_messages if m.role == "tool"]


async def park_and_answer(rt: Runtime, thread: str, answer: Any) -> tuple[dict[str, Any], RunState]:
    parked = await rt.run("a", "book a table", thread_id=thread)
    assert parked.phase is Phase.WAITING, parked.end_cause
    (ticket,) = parked.tickets
    assert ticket.await_reason.value == "user_input"
    assert ticket.payload["mcp_server"] == "el" and ticket.payload["tool"] == "book"
    form = ticket.payload["requests"]["elicitation"]
    done = await rt.resume(ticket, Respond(value=answer))
    return form, done


@pytest.mark.parametrize("protocol", ["auto", "handshake"])
async def test_a_stock_elicit_over_stdio_is_answered_through_the_ticket(
    closing: list[Runtime], marks: Path, protocol: str
) -> None:
    rt = build(
        [ScriptedTurn.call("el__book", {"city": "Paris"}), "booked"],
        [stdio(marks, protocol=protocol)],
    )
    closing.append(rt)
    form, done = await park_and_answer(rt, "s", {"people": 4})
    assert form["message"] == "How many people in Paris?" and form["mode"] == "form"
    assert set(form["requested_schema"]["properties"]) == PARTY
    assert done.phase is Phase.ENDED and done.final_text == "booked"
    assert tools_of(done) == ["booked for 4 in Paris"]
    lines = marks.read_text().splitlines()
    asked = [line for line in lines if line.startswith("book asked")]
    # auto: the 2026-07-28 attempt fails for want of a back-channel, then the handshake era.
    assert len(asked) == (2 if protocol == "auto" else 1)
    assert lines[-1] == "book answer Paris accept"
    assert lines.count("book answer Paris accept") == 1, "answered once, on the open call"
    assert connection(rt, "el").held.calls == {}


async def test_a_stock_elicit_over_session_http_is_answered_through_the_ticket(
    closing: list[Runtime], marks: Path, http_server: str
) -> None:
    server = McpServerConfig(id="el", transport="http", url=http_server)
    rt = build([ScriptedTurn.call("el__book", {"city": "Oslo"}), "booked"], [server])
    closing.append(rt)
    form, done = await park_and_answer(rt, "h", {"people": 2})
    assert form["message"] == "How many people in Oslo?"
    assert tools_of(done) == ["booked for 2 in Oslo"]
    assert "book answer Oslo accept" in marks.read_text()


async def test_a_declined_question_and_two_questions_in_one_call(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build(
        [
            ScriptedTurn.call("el__book", {"city": "Rome"}),
            "declined",
            ScriptedTurn.call("el__pick", {}),
            "picked",
        ],
        [stdio(marks, protocol="handshake")],
    )
    closing.append(rt)
    _, done = await park_and_answer(rt, "d", {"action": "decline"})
    assert tools_of(done) == ["not booked (decline)"]
    first = await rt.run("a", "pick", thread_id="p")
    (ticket,) = first.tickets
    assert ticket.payload["requests"]["elicitation"]["message"] == "First colour?"
    second = await rt.resume(ticket, Respond(value={"colour": "red"}))
    (ticket2,) = second.tickets
    assert ticket2.payload["requests"]["elicitation"]["message"] == "Second colour?"
    assert ticket2.ticket_id != ticket.ticket_id
    done2 = await rt.resume(ticket2, Respond(value={"colour": "blue"}))
    assert tools_of(done2) == ["red and blue"]


async def test_two_calls_in_flight_on_one_connection_get_their_own_answers(
    closing: list[Runtime], marks: Path
) -> None:
    def model(request: Any) -> Any:
        text = request.messages[-1].text if request.messages else ""
        if request.messages[-1].role == "tool":
            return f"done: {text}"
        return (
            ScriptedTurn.call("el__book", {"city": "Lima"})
            if "book" in text
            else ScriptedTurn.call("el__nap", {"seconds": 1.0})
        )

    rt = build([model] * 6, [stdio(marks, protocol="handshake")])
    closing.append(rt)
    await rt.aresolve("a")
    napping = asyncio.create_task(rt.run("a", "nap", thread_id="n"))
    await until(lambda: "nap started" in marks.read_text(), "the nap to be in flight")
    booking = await rt.run("a", "book", thread_id="b")
    # The question waited until the nap was over: then only the booking could have asked.
    assert booking.phase is Phase.WAITING
    assert (await napping).final_text == "done: napped 1.0"
    lines = marks.read_text().splitlines()
    assert lines.index("book asked Lima pid=" + lines[0].split("pid=")[1]) < lines.index(
        "nap ended"
    )
    done = await rt.resume(booking.tickets[0], Respond(value={"people": 3}))
    assert done.final_text == "done: booked for 3 in Lima"


async def test_an_unanswered_question_is_cancelled_and_a_late_answer_calls_again(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build(
        [ScriptedTurn.call("el__book", {"city": "Kyiv"}), "booked"],
        [stdio(marks, protocol="handshake", elicit_timeout=0.3)],
    )
    closing.append(rt)
    parked = await rt.run("a", "book", thread_id="late")
    conn = connection(rt, "el")
    await until(lambda: "book answer Kyiv cancel" in marks.read_text(), "the question to lapse")
    await until(lambda: conn.held.calls == {}, "the lapsed call to end")
    done = await rt.resume(parked.tickets[0], Respond(value={"people": 5}))
    assert tools_of(done) == ["booked for 5 in Kyiv"]
    # Asked twice: the lapsed call, then the call made anew, answered at once.
    assert marks.read_text().count("book asked Kyiv") == 2


async def test_a_server_killed_while_its_question_waits_is_a_typed_error_and_restarts(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build(
        [
            ScriptedTurn.call("el__book", {"city": "Baku"}),
            ScriptedTurn.call("el__quick", {"text": "after"}),
            "survived",
        ],
        [stdio(marks, protocol="handshake")],
    )
    closing.append(rt)
    parked = await rt.run("a", "book", thread_id="k")
    pid = int(marks.read_text().split("pid=")[1].split()[0])
    os.kill(pid, signal.SIGKILL)
    conn = connection(rt, "el")
    await until(lambda: conn.held.calls == {}, "the held call to fail")
    done = await rt.resume(parked.tickets[0], Respond(value={"people": 1}))
    assert done.phase is Phase.ENDED and done.final_text == "survived"
    answered, after = [m for m in done.new_messages if m.role == "tool"]
    # The answer finds no open call: the call is made anew on a restarted server, and
    # its question is answered at once with it.
    assert answered.text == "booked for 1 in Baku"
    assert after.text == "quick after"
    assert conn.restarts == 1


async def test_a_server_killed_mid_call_is_a_typed_error_naming_the_signal(
    closing: list[Runtime], marks: Path
) -> None:
    rt = build(
        [
            ScriptedTurn.call("el__nap", {"seconds": 60}),
            ScriptedTurn.call("el__quick", {"text": "x"}),
            "ok",
        ],
        [stdio(marks)],
    )
    closing.append(rt)
    run = asyncio.create_task(rt.run("a", "nap", thread_id="m"))
    await until(lambda: "nap started" in marks.read_text(), "the nap to be in flight")
    os.kill(int(marks.read_text().split("pid=")[1].split()[0]), signal.SIGKILL)
    done = await asyncio.wait_for(run, 60)
    killed, after = [m for m in done.new_messages if m.role == "tool"]
    assert killed.metadata["is_error"] and "killed by signal 9" in killed.text, killed.text
    assert "outcome is unknown" in killed.text
    assert after.text == "quick x" and done.final_text == "ok"
