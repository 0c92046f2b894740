"""Attacks on the server: keys, other profiles' ids, oversized and malformed bodies."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from srv_util import ALICE, BOB, CAROL, Served
from sse_util import sse_events


def _problem(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = r.json()
    assert body["status"] == status and body["detail"] and body["fix"]
    return body


ENDPOINTS = [
    ("GET", "/v1/agents"),
    ("POST", "/v1/agents"),
    ("GET", "/v1/threads"),
    ("POST", "/v1/threads"),
    ("GET", "/v1/threads/t1"),
    ("POST", "/v1/threads/t1/runs"),
    ("GET", "/v1/runs/r1"),
    ("GET", "/v1/runs/r1/events"),
    ("POST", "/v1/runs/r1/resume"),
    ("POST", "/v1/runs/r1/cancel"),
    ("POST", "/v1/agents/assistant/chat"),
    ("POST", "/v1/agents/assistant/ag-ui"),
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@pytest.mark.parametrize(
    "auth", [None, "Bearer wrong-key-0123456789abcdef", "Basic abc", "Token abc"]
)
def test_every_endpoint_needs_a_known_key(
    server: Served, method: str, path: str, auth: str | None
) -> None:
    headers = {"Authorization": auth} if auth else {}
    r = httpx.request(method, server.url + path, headers=headers, json={})
    body = _problem(r, 401)
    assert body["field"] == "header:Authorization"
    assert r.headers["www-authenticate"].startswith("Bearer")


def _waiting_run(c: httpx.Client) -> tuple[str, str, str]:
    tid = c.post("/v1/threads", json={"agent_id": "assistant"}).json()["thread_id"]
    run = c.post(
        f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "delete"}
    ).json()
    return tid, run["run_id"], run["tickets"][0]["ticket_id"]


def test_another_profiles_thread_is_404_and_untouched(server: Served) -> None:
    with server.client(ALICE) as alice, server.client(BOB) as bob:
        tid, run_id, ticket = _waiting_run(alice)
        before = alice.get(f"/v1/threads/{tid}").json()
        approve = {"decisions": [{"ticket_id": ticket, "decision": {"kind": "approve"}}]}
        attempts = [
            bob.get(f"/v1/threads/{tid}"),
            bob.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "hi"}),
            bob.get(f"/v1/runs/{run_id}"),
            bob.get(f"/v1/runs/{run_id}/events"),
            bob.post(f"/v1/runs/{run_id}/resume", json=approve),
            bob.post(f"/v1/runs/{run_id}/cancel"),
        ]
        for r in attempts:
            assert _problem(r, 404)["title"] == "not found"
        # The same answer as for an id that never existed: nothing leaks.
        assert (
            bob.get("/v1/threads/thread_nope").json()["detail"]
            == "thread 'thread_nope' does not exist"
        )
        assert tid not in [t["thread_id"] for t in bob.get("/v1/threads").json()["threads"]]
        assert alice.get(f"/v1/threads/{tid}").json() == before
        # A malformed body on someone else's thread still says 404, not 422.
        _problem(bob.post(f"/v1/threads/{tid}/runs", json={"bogus": 1}), 404)
        # Bob's chat with the same client-chosen id is his own thread.
        r = alice.post(f"/v1/runs/{run_id}/resume", json=approve)
        assert r.json()["final_text"].startswith("Result: deleted")


def test_only_publishers_publish_or_roll_back(server: Served) -> None:
    with server.client(BOB) as bob, server.client(ALICE) as alice:
        before = alice.get("/v1/agents").json()
        config = {"id": "assistant", "model_binding": "echo-model"}
        _problem(bob.post("/v1/agents", json={"config": config}), 403)
        _problem(bob.post("/v1/agents/assistant/rollback", json={"version": 1}), 403)
        assert alice.get("/v1/agents").json() == before
        assert alice.get("/v1/agents/assistant/versions").json()["versions"] == []


def test_ticket_of_another_run_is_refused(server: Served) -> None:
    with server.client(ALICE) as alice:
        _, run_a, ticket_a = _waiting_run(alice)
        _, run_b, _ = _waiting_run(alice)
        r = alice.post(
            f"/v1/runs/{run_b}/resume",
            json={"decisions": [{"ticket_id": ticket_a, "decision": {"kind": "approve"}}]},
        )
        assert _problem(r, 409)["field"] == "/decisions/0/ticket_id"
        assert alice.get(f"/v1/runs/{run_a}").json()["pending_tickets"][0]["ticket_id"] == ticket_a


def test_oversized_body_is_413_declared_or_chunked(server: Served) -> None:
    with server.client() as c:
        big = b'{"agent_id": "assistant", "input": "' + b"x" * 1_100_000 + b'"}'
        tid = c.post("/v1/threads", json={}).json()["thread_id"]
        headers = {"Content-Type": "application/json"}
        _problem(c.post(f"/v1/threads/{tid}/runs", content=big, headers=headers), 413)

        def chunks() -> Any:
            for i in range(0, len(big), 65536):
                yield big[i : i + 65536]

        _problem(c.post(f"/v1/threads/{tid}/runs", content=chunks(), headers=headers), 413)
        _problem(c.post("/v1/agents/assistant/chat", content=big, headers=headers), 413)
        assert c.get(f"/v1/threads/{tid}").json()["messages"] == []


MALFORMED = [
    ("POST", "/v1/agents", b"{", 400),
    ("POST", "/v1/agents", b'{"config": 5}', 422),
    ("POST", "/v1/agents", b'{"config": {"id": ""}}', 422),
    ("POST", "/v1/agents/assistant/rollback", b'{"version": 0}', 422),
    ("POST", "/v1/threads", b'{"agent_id": 3}', 422),
    ("POST", "/v1/threads", b'{"agent_id": "no-such-agent"}', 404),
    ("POST", "/v1/threads/{tid}/runs", b"[]", 422),
    ("POST", "/v1/threads/{tid}/runs", b'{"agent_id": "assistant", "input": ""}', 422),
    ("POST", "/v1/threads/{tid}/runs", b'{"agent_id": "nope", "input": "hi"}', 404),
    ("POST", "/v1/threads/{tid}/runs", b'{"agent_id": "assistant", "input": "x", "extra": 1}', 422),
    ("POST", "/v1/runs/{run}/resume", b'{"decisions": []}', 422),
    (
        "POST",
        "/v1/runs/{run}/resume",
        b'{"decisions": [{"ticket_id": "t", "decision": {"kind": "maybe"}}]}',
        422,
    ),
    ("POST", "/v1/agents/assistant/chat", b'{"id": "c1", "messages": []}', 422),
    (
        "POST",
        "/v1/agents/assistant/chat",
        b'{"id": "c1", "messages": [{"role": "system", "parts": []}]}',
        422,
    ),
    (
        "POST",
        "/v1/agents/assistant/chat",
        json.dumps(
            {
                "id": "c1",
                "trigger": "resume-stream",
                "messages": [{"role": "user", "parts": []}],
            }
        ).encode(),
        422,
    ),
    ("POST", "/v1/agents/assistant/ag-ui", b'{"threadId": 1}', 422),
    (
        "POST",
        "/v1/agents/assistant/ag-ui",
        json.dumps(
            {"threadId": "t", "runId": "r", "messages": [], "state": {}, "tools": [], "context": []}
            | {"forwardedProps": {}}
        ).encode(),
        422,
    ),
    ("GET", "/v1/runs/{run}/events?after=abc", b"", 400),
    ("GET", "/v1/runs/{run}/events?after=-1", b"", 400),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), MALFORMED)
def test_malformed_requests_get_a_problem_naming_the_field(
    server: Served, method: str, path: str, body: bytes, status: int
) -> None:
    with server.client() as c:
        tid, run_id, ticket = _waiting_run(c)
        before = c.get(f"/v1/threads/{tid}").json()
        url = path.format(tid=tid, run=run_id)
        r = c.request(
            method, url, content=body or None, headers={"Content-Type": "application/json"}
        )
        problem = _problem(r, status)
        if status == 422:
            assert problem["field"]
        assert c.get(f"/v1/threads/{tid}").json() == before
        assert c.get(f"/v1/runs/{run_id}").json()["pending_tickets"][0]["ticket_id"] == ticket


def test_wrong_content_type_is_415(server: Served) -> None:
    with server.client() as c:
        r = c.post("/v1/threads", content=b"agent_id=x", headers={"Content-Type": "text/plain"})
        assert _problem(r, 415)["field"] == "header:Content-Type"


def test_unknown_path_and_method_are_problems(server: Served) -> None:
    with server.client() as c:
        _problem(c.get("/v1/nothing"), 404)
        _problem(c.delete("/v1/threads"), 405)


def test_runs_use_the_keys_profile_scope(server: Served) -> None:
    """An approval remembered for carol's profile applies to her threads only."""
    with server.client(CAROL) as carol, server.client(BOB) as bob:
        _, run_id, ticket = _waiting_run(carol)
        remember = {"kind": "approve", "remember": "profile"}
        r = carol.post(
            f"/v1/runs/{run_id}/resume",
            json={"decisions": [{"ticket_id": ticket, "decision": remember}]},
        )
        assert r.json()["phase"] == "ended"
        # Carol, new thread: the same call is not asked again.
        tid = carol.post("/v1/threads", json={}).json()["thread_id"]
        again = carol.post(
            f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "delete"}
        )
        assert again.json()["phase"] == "ended"
        assert again.json()["final_text"] == "Result: deleted /tmp/x.txt. All done."
        # Bob's profile remembers nothing: he is asked.
        _, _, bob_ticket = _waiting_run(bob)
        assert bob_ticket


def _chat(c: httpx.Client, chat_id: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    body = {"id": chat_id, "messages": messages, "trigger": "submit-message"}
    with c.stream("POST", "/v1/agents/assistant/chat", json=body) as r:
        assert r.status_code == 200, r.read()
        return [json.loads(d) for _, _, d in sse_events(r) if d != "[DONE]"]


def test_chat_ids_are_per_profile_and_approvals_cannot_cross(server: Served) -> None:
    with server.client(ALICE) as alice, server.client(BOB) as bob:
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete it"}]}
        chunks = _chat(alice, "shared-chat-id", [user])
        request = next(c for c in chunks if c["type"] == "tool-approval-request")
        # Bob answers Alice's approval id on the same chat id: his chat has no such ticket.
        answered = {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {
                    "type": "dynamic-tool",
                    "toolName": "delete_file",
                    "toolCallId": request["toolCallId"],
                    "state": "approval-responded",
                    "input": {},
                    "approval": {"id": request["approvalId"], "approved": True},
                }
            ],
        }
        body = {"id": "shared-chat-id", "messages": [user, answered], "trigger": "submit-message"}
        r = bob.post("/v1/agents/assistant/chat", json=body)
        assert _problem(r, 409)["title"] == "ticket not pending"
        # Bob's message on that chat id starts his own thread; Alice's ticket still waits.
        mine = _chat(bob, "shared-chat-id", [{**user, "parts": [{"type": "text", "text": "hi"}]}])
        assert "".join(c.get("delta", "") for c in mine) == "Hello! You said: hi"
        threads = alice.get("/v1/threads").json()["threads"]
        pending = [
            alice.get(f"/v1/threads/{t['thread_id']}").json()["pending_tickets"] for t in threads
        ]
        assert any(p and p[0]["ticket_id"] == request["approvalId"] for p in pending)
