"""The real front-end clients against ``awaken serve``: ``ai@6`` and ``@ag-ui/client``.

The scripts in js/ use the npm packages pinned by js/package-lock.json
(``npm ci --prefix tests/server/js``, which .ci/run does).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from srv_util import ALICE, BOB, Served, start_server, stop_server

JS = Path(__file__).parent / "js"


def _node(script: str, server: Served, **extra_env: str) -> dict[str, Any]:
    if not (JS / "node_modules").is_dir() or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node or tests/server/js/node_modules missing: .ci/run must `npm ci` them")
        pytest.skip("run `npm ci --prefix tests/server/js` (needs Node 20) for the client tests")
    env = {**os.environ, "SERVER_URL": server.url, "SERVER_KEY": ALICE, **extra_env}
    done = subprocess.run(
        ["node", script], cwd=JS, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stderr}\n{done.stdout}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_ai_sdk_v6_chat_text_tool_and_approval_round_trip(server: Served) -> None:
    out = _node("aisdk_chat.mjs", server)
    assert out["text"] == "Hello! You said: hello there"
    assert out["textDeltas"] > 1, "text arrives in several deltas"
    assert out["done"] == 1
    assert out["tool"] == {
        "name": "get_weather",
        "state": "output-available",
        "input": {"city": "Paris"},
        "output": "sunny in Paris",
    }
    assert out["toolText"] == "Let me check.Result: sunny in Paris. All done."
    assert out["asked"] == {
        "state": "approval-requested",
        "name": "delete_file",
        "hasApprovalId": True,
    }
    assert out["approved"] == {
        "state": "output-available",
        "output": "deleted /tmp/x.txt",
        "text": "Result: deleted /tmp/x.txt. All done.",
        "sameMessage": True,
        "messages": 6,
    }
    assert out["denied"] == {
        "state": "output-denied",
        "text": "Result: The call was denied: not today. All done.",
    }
    assert out["finalStatus"] == "ready"


def test_ag_ui_http_agent_text_tool_interrupt_resume_reasoning(server: Served) -> None:
    out = _node("agui_agent.mjs", server)
    text = out["text"]
    assert text["deltas"] > 1 and text["first"] == "RUN_STARTED" and text["last"] == "RUN_FINISHED"
    assert text["outcome"] == "success" and text["echoesRunId"] and text["echoesThreadId"]
    assert text["messages"] == [
        {"role": "assistant", "content": "Hello! You said: hello agui", "toolCalls": []}
    ]
    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"} <= set(
        out["tool"]["types"]
    )
    assert {"role": "tool", "content": "sunny in Paris", "toolCalls": []} in out["tool"]["messages"]
    assert out["interrupt"] == {
        "outcome": "interrupt",
        "interrupts": [{"reason": "tool_permission", "hasToolCallId": True, "hasId": True}],
    }
    resumed = out["resumed"]
    assert resumed["outcome"] == "success"
    assert resumed["messages"][-1]["content"] == "Result: deleted /tmp/x.txt. All done."
    assert {"REASONING_START", "REASONING_MESSAGE_CONTENT", "REASONING_END"} <= set(
        out["reasoning"]["types"]
    )
    # The thread's state (the permissions audit, thread scope) reached the client's
    # state through STATE_SNAPSHOT and JSON-patch STATE_DELTA events it applied itself.
    assert sorted(out["stateEvents"]) == ["STATE_DELTA", "STATE_SNAPSHOT"]
    assert "permissions.audit" in out["state"]["keys"]
    assert out["state"]["audit"] == ["get_weather:allow", "delete_file:approve"]
    # RUN_STARTED names the server's run (metadata.awakenRunId) beside the client's runId.
    assert out["serverRunId"] == {"differs": True, "found": 200, "threadMatches": True}
    # abortRun() cancels the run under the default --on-disconnect: nothing of the
    # stalled answer is kept.
    assert out["abort"]["endCause"] == "cancelled"
    assert out["abort"]["thread"]["answer"] == ""
    # History the client owns: seeded turns reach the model, a changed one is refused.
    assert out["seeded"] == [
        "Seen: user: my name is Ada | assistant: Nice to meet you, Ada. | user: recall everything"
    ]
    assert "409" in out["diverged"] and "history-diverged" in out["diverged"]


CRAWL = " ".join(f"step{i}" for i in range(40))
"""The scripted model's whole answer to "crawl"."""


@pytest.fixture(scope="module")
def continuing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server whose dropped front-end streams leave their runs running, and whose chats
    run on the history their clients send."""
    served = start_server(
        tmp_path_factory.mktemp("continue"), "--on-disconnect", "continue", "--history", "client"
    )
    yield served
    stop_server(served)


def _foreign_chat_is_404(out: dict[str, Any]) -> None:
    assert out["foreign"]["status"] == 404
    assert out["foreign"]["type"] == "application/problem+json"
    assert "does not exist" in out["foreign"]["body"]["detail"]


def test_ai_sdk_stop_and_drop_cancel_the_run_by_default(server: Served) -> None:
    out = _node("aisdk_disconnect.mjs", server, ON_DISCONNECT="cancel", OTHER_KEY=BOB)
    stop = out["stop"]
    assert stop["status"] == "ready" and stop["seen"].startswith("held0")
    assert stop["endCause"] == "cancelled"
    # The model stalled mid-answer: the thread keeps nothing of the answer the client
    # saw part of (never more than the client saw).
    assert stop["thread"]["answer"] == ""
    # A dropped connection cancels too; resumeStream then finds nothing (204).
    assert out["cut"]["status"] == "error" and out["cut"]["partial"].startswith("step0")
    _foreign_chat_is_404(out)
    assert out["gets"] == [204, 204]
    assert out["resumed"]["status"] == "ready"
    assert out["resumed"]["text"] == out["cut"]["partial"]
    assert out["cutRun"]["endCause"] == "cancelled"
    assert CRAWL.startswith(out["cutRun"]["thread"]["answer"])
    assert len(out["cutRun"]["thread"]["answer"]) < len(CRAWL)
    assert out["unknown"] == 404


def test_ai_sdk_cancel_through_run_id_and_resume_stream_under_continue(
    continuing: Served,
) -> None:
    out = _node("aisdk_disconnect.mjs", continuing, ON_DISCONNECT="continue", OTHER_KEY=BOB)
    stop = out["stop"]
    assert stop["cancelStatus"] == 202
    assert stop["endCause"] == "cancelled" and stop["thread"]["answer"] == ""
    # A stop alone leaves the run to finish in the background.
    leave = out["leave"]
    assert leave["endCause"] == "natural_end" and leave["thread"]["answer"] == CRAWL
    assert CRAWL.startswith(leave["seen"]) and len(leave["seen"]) < len(CRAWL)
    # Dropped mid-answer, resumed: the message ends with every chunk exactly once.
    cut = out["cut"]
    assert cut["status"] == "error" and CRAWL.startswith(cut["partial"])
    assert len(cut["partial"]) < len(CRAWL)
    _foreign_chat_is_404(out)
    resumed = out["resumed"]
    assert resumed == {
        "status": "ready",
        "text": CRAWL,
        "roles": ["user", "assistant"],
        "runId": True,
    }
    assert out["gets"] == [200, 204]
    assert out["cutRun"] == {
        "endCause": "natural_end",
        "thread": {"messages": 2, "answer": CRAWL},
    }
    assert out["unknown"] == 404


def test_ai_sdk_regenerate_seeded_history_and_divergence(server: Served) -> None:
    out = _node("aisdk_history.mjs", server)
    regen = out["regenerate"]
    assert regen["status"] == "ready" and regen["roles"] == ["user", "assistant"]
    assert regen["first"].startswith("Roll number ") and regen["second"].startswith("Roll number ")
    assert regen["first"] != regen["second"], "a regenerate is a new answer"
    assert regen["newThread"] and regen["chat"] == {"current": True, "revisions": True}
    assert regen["oldChat"], "the old revision names the chat's current thread"
    assert regen["current"] == ["user: roll the dice", f"assistant: {regen['second']}"]
    # The withdrawn answer stays in the revision log, untouched.
    assert regen["old"] == ["user: roll the dice", f"assistant: {regen['first']}"]
    empty = out["emptyRegenerate"]
    assert empty["status"] == 409 and empty["type"] == "application/problem+json"
    assert empty["body"]["type"].endswith("/nothing-to-regenerate")
    assert "no user message" in empty["body"]["detail"] and empty["created"] == 0
    assert out["seeded"] == {
        "status": "ready",
        "text": "Seen: user: my name is Ada | assistant: Nice to meet you, Ada. "
        "| user: recall everything",
        "thread": 4,
    }
    diverged = out["diverged"]
    assert diverged["status"] == "error" and diverged["unchanged"]
    assert diverged["error"]["status"] == 409
    assert diverged["error"]["type"].endswith("/history-diverged")
    assert "'hello one'" in diverged["error"]["detail"]
    assert "'hello edited'" in diverged["error"]["detail"]


def _ui(role: str, text: str) -> dict[str, Any]:
    return {"id": f"{role}-{text}", "role": role, "parts": [{"type": "text", "text": text}]}


def _chat_text(served: Served, chat_id: str, messages: list[dict[str, Any]]) -> str:
    with served.client() as client:
        response = client.post(
            "/v1/agents/assistant/chat", json={"id": chat_id, "messages": messages}
        )
    assert response.status_code == 200, response.text
    chunks = [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")
    ]
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def test_history_client_makes_the_clients_list_authoritative(continuing: Served) -> None:
    first = [_ui("user", "a"), _ui("assistant", "b"), _ui("user", "recall")]
    assert _chat_text(continuing, "owned", first) == "Seen: user: a | assistant: b | user: recall"
    # A list that differs from the one before is no conflict here: it is the history.
    second = [_ui("user", "x"), _ui("user", "recall")]
    assert _chat_text(continuing, "owned", second) == "Seen: user: x | user: recall"
