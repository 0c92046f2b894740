"""Gates and tickets over MCP with the official TypeScript SDK client (``js/gates_client.mjs``).

- stdio (the client starts ``awaken mcp serve``; a back-channel, so the server
  asks with ``elicitation/create``): a deny-gated tool refused, an ask-gated
  tool elicited and then run or not as answered, an agent-as-tool that parks
  answered by elicitation inside one call, audio and file parts intact;
- streamable HTTP, stateless, a client that declares no elicitation: the
  parked agent's error names the REST route, and ``awaken serve`` on the same
  store and keys answers it with the same key (another key gets a 404);
- HTTP with ``--sessions``: the same elicitation as over stdio.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conformance.harness import Process, awaken_command, free_port, start_listening
from mcp_setup import PDF_B64, WAV_B64

HERE = Path(__file__).parent
JS = HERE / "js"
GATED = HERE / "gated"
ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdefgh"


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "AWAKEN_SERVER_KEYS": f"{ALICE}:alice,{BOB}:bob",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def _serve(store: Path) -> list[str]:
    return [
        awaken_command(), "mcp", "serve", "--agents", str(GATED),
        "--setup", "mcp_setup:gated_setup", "--store", f"sqlite:///{store}", "--agents-as-tools",
    ]  # fmt: skip


def _client(calls: list[dict[str, Any]], answers: list[dict[str, Any]] | None, **env: str) -> Any:
    if not (JS / "node_modules").is_dir() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node or tests/mcp/js/node_modules missing: .ci/run must `npm ci` them")
        pytest.skip("run `npm ci --prefix tests/mcp/js` (needs Node 20) for the TS client tests")
    run_env = {**_env(), "CALLS": json.dumps(calls), **env}
    if answers is not None:
        run_env["ANSWERS"] = json.dumps(answers)
    done = subprocess.run(
        ["node", "gates_client.mjs"], cwd=JS, env=run_env, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, f"gates_client.mjs failed:\n{done.stderr}\n{done.stdout}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _stdio(tmp: Path) -> dict[str, str]:
    return {
        "SERVER_COMMAND": json.dumps(_serve(tmp / "awaken.db")),
        "SERVER_ENV": json.dumps(_env()),
    }


def text(result: dict[str, Any]) -> str:
    assert "error" not in result, result
    return "".join(b["text"] for b in result["content"] if b["type"] == "text")


def approve() -> dict[str, Any]:
    return {"action": "accept", "content": {"decision": "approve"}}


def test_over_stdio_deny_refuses_and_ask_is_elicited(tmp_path: Path) -> None:
    calls = [
        {"name": "wipe", "arguments": {"path": "/etc"}},
        {"name": "shout", "arguments": {"text": "yes"}},
        {"name": "shout", "arguments": {"text": "no"}},
        {"name": "media", "arguments": {}},
    ]
    answers = [approve(), {"action": "accept", "content": {"decision": "deny", "reason": "nope"}}]
    out = _client(calls, answers, **_stdio(tmp_path))
    wiped, yes, no, media = out["results"]
    assert wiped["isError"] and 'deny wipe(path ~ "/*")' in text(wiped)
    assert not yes["isError"] and text(yes) == "YES!"
    assert no["isError"] and "nope" in text(no) and "NO!" not in text(no)
    assert len(out["asked"]) == 2
    form = out["asked"][0]
    assert "'shout'" in form["message"] and '{"text": "yes"}' in form["message"]
    assert form["requestedSchema"]["properties"]["decision"]["enum"] == ["approve", "deny"]
    # Audio and file parts arrive intact, with no empty text block before them.
    assert [b["type"] for b in media["content"]] == ["text", "audio", "resource"]
    audio, resource = media["content"][1], media["content"][2]["resource"]
    assert audio["data"] == WAV_B64 and audio["mimeType"] == "audio/wav"
    assert resource["blob"] == PDF_B64 and resource["mimeType"] == "application/pdf"


def test_over_stdio_a_parked_agent_is_answered_by_elicitation_in_one_call(tmp_path: Path) -> None:
    calls = [
        {"name": "helper", "arguments": {"prompt": "shout hello"}},
        {"name": "helper", "arguments": {"prompt": "ask_name"}},
    ]
    answers = [approve(), {"action": "accept", "content": {"name": "Grace"}}]
    out = _client(calls, answers, **_stdio(tmp_path))
    shouted, named = out["results"]
    assert not shouted["isError"] and text(shouted) == "done: HELLO!"
    assert not named["isError"] and json.loads(text(named).removeprefix("done: ")) == {
        "name": "Grace"
    }
    question = out["asked"][1]
    assert question["message"] == "What is your name?"
    assert question["requestedSchema"]["properties"]["name"]["type"] == "string"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """``awaken mcp serve --http`` (stateless), the same with ``--sessions``, and
    ``awaken serve`` (REST), all on one store and one key file."""
    tmp_path = tmp_path_factory.mktemp("gates-http")
    store = tmp_path / "awaken.db"
    mcp_port, sessions_port, rest_port = free_port(), free_port(), free_port()
    started: list[Process] = []
    try:
        stateless = [*_serve(store), "--http", "--port", str(mcp_port)]
        started.append(start_listening(stateless, mcp_port, tmp_path / "mcp.log", _env()))
        sessions = [*_serve(store), "--http", "--sessions", "--port", str(sessions_port)]
        started.append(start_listening(sessions, sessions_port, tmp_path / "ses.log", _env()))
        rest = [
            awaken_command(), "serve", "--agents", str(GATED), "--setup", "mcp_setup:gated_setup",
            "--store", f"sqlite:///{store}", "--port", str(rest_port),
        ]  # fmt: skip
        started.append(start_listening(rest, rest_port, tmp_path / "rest.log", _env()))
        yield (
            f"http://127.0.0.1:{mcp_port}/mcp",
            f"http://127.0.0.1:{sessions_port}/mcp",
            f"http://127.0.0.1:{rest_port}",
        )
    finally:
        for process in started:
            process.stop()


def test_a_client_without_elicitation_is_answered_through_rest(
    servers: tuple[str, str, str],
) -> None:
    mcp_url, _, rest = servers
    out = _client(
        [{"name": "helper", "arguments": {"prompt": "shout over rest"}}],
        None,
        SERVER_URL=mcp_url,
        SERVER_KEY=ALICE,
    )
    (parked,) = out["results"]
    assert parked["isError"]
    words = text(parked)
    run = words.split("run '")[1].split("'")[0]
    thread = words.split("on thread '")[1].split("'")[0]
    ticket = words.split("ticket(s) '")[1].split("'")[0]
    assert f"POST /v1/runs/{run}/resume" in words
    alice = {"Authorization": f"Bearer {ALICE}"}
    bob = {"Authorization": f"Bearer {BOB}"}
    assert httpx.get(f"{rest}/v1/runs/{run}", headers=bob, timeout=30).status_code == 404
    shown = httpx.get(f"{rest}/v1/runs/{run}", headers=alice, timeout=30)
    assert shown.status_code == 200, shown.text
    assert [t["ticket_id"] for t in shown.json()["pending_tickets"]] == [ticket]
    body = {"decisions": [{"ticket_id": ticket, "decision": {"kind": "approve"}}]}
    stolen = httpx.post(f"{rest}/v1/runs/{run}/resume", json=body, headers=bob, timeout=30)
    assert stolen.status_code == 404
    answered = httpx.post(f"{rest}/v1/runs/{run}/resume", json=body, headers=alice, timeout=60)
    assert answered.status_code == 200, answered.text
    assert "done: OVER REST!" in answered.text
    messages = httpx.get(f"{rest}/v1/threads/{thread}", headers=alice, timeout=30).json()
    assert "done: OVER REST!" in json.dumps(messages)
    # The thread is the key's: MCP continues it for alice, and not for bob.
    again = _client(
        [{"name": "helper", "arguments": {"prompt": "ask_name", "thread_id": thread}}],
        None,
        SERVER_URL=mcp_url,
        SERVER_KEY=BOB,
    )
    assert text(again["results"][0]) == f"thread {thread!r} does not exist"


def test_over_http_with_sessions_the_client_is_asked(servers: tuple[str, str, str]) -> None:
    _, sessions_url, _ = servers
    out = _client(
        [{"name": "helper", "arguments": {"prompt": "shout sessions"}}],
        [approve()],
        SERVER_URL=sessions_url,
        SERVER_KEY=ALICE,
    )
    assert text(out["results"][0]) == "done: SESSIONS!"
    assert len(out["asked"]) == 1


async def test_a_2026_client_over_stateless_http_answers_in_its_retry(
    servers: tuple[str, str, str],
) -> None:
    # The official Python SDK negotiates 2026-07-28: the parked call answers
    # InputRequiredResult, and the client's retry (a new POST) resumes the run.
    import httpx2
    import mcp_types as types
    from mcp.client.streamable_http import streamable_http_client

    from mcp import Client

    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if "name" in params.message:
            return types.ElicitResult(action="accept", content={"name": "Lin"})
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    mcp_url = servers[0]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=60)
    async with (
        http,
        Client(
            streamable_http_client(mcp_url, http_client=http), elicitation_callback=answer
        ) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        shouted = await client.call_tool("helper", {"prompt": "shout modern"})
        named = await client.call_tool("helper", {"prompt": "ask_name"})
        direct = await client.call_tool("shout", {"text": "direct"})
    assert [b.text for b in shouted.content] == ["done: MODERN!"]
    assert json.loads(named.content[0].text.removeprefix("done: ")) == {"name": "Lin"}
    assert [b.text for b in direct.content] == ["DIRECT!"]
    assert len(asked) == 3
