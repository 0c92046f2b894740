"""The neutral /v1 API against a real ``awaken serve``."""

from __future__ import annotations

import httpx
from srv_util import Served
from sse_util import agent_events, sse_events


def _thread(c: httpx.Client) -> str:
    r = c.post("/v1/threads", json={"agent_id": "assistant"})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


def test_run_json_and_thread_read(server: Served) -> None:
    with server.client() as c:
        tid = _thread(c)
        r = c.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "weather?"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert (
            body["phase"] == "ended" and body["final_text"] == "Result: sunny in Paris. All done."
        )
        thread = c.get(f"/v1/threads/{tid}").json()
        roles = [m["role"] for m in thread["messages"]]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert thread["runs"] == [body["run_id"]]
        run = c.get(f"/v1/runs/{body['run_id']}").json()
        assert run["record"]["phase"] == "ended" and run["config_version"] is None
        assert tid in [t["thread_id"] for t in c.get("/v1/threads").json()["threads"]]


def test_stream_ids_are_contiguous_seqs(server: Served) -> None:
    with server.client() as c:
        tid = _thread(c)
        with c.stream(
            "POST",
            f"/v1/threads/{tid}/runs",
            json={"agent_id": "assistant", "input": "slow", "stream": True},
        ) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            items = list(sse_events(r))
        ids = [int(i) for i, _, _ in items if i is not None]
        assert ids == list(range(1, len(ids) + 1))
        assert items[-1][1] == "run_finish"


def test_reconnect_with_last_event_id_gets_each_missed_event_once(server: Served) -> None:
    with server.client() as c:
        tid = _thread(c)
        seen: list[dict[str, object]] = []
        with c.stream(
            "POST",
            f"/v1/threads/{tid}/runs",
            json={"agent_id": "assistant", "input": "slow", "stream": True},
        ) as r:
            for _, _, data in sse_events(r):
                import json

                seen.append(json.loads(data))
                if len(seen) == 5:
                    break  # the client drops the connection mid-run
        run_id = seen[0]["run_id"]
        last = seen[-1]["seq"]
        with c.stream(
            "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(last)}
        ) as r:
            rest = agent_events(r)
        seqs = [e["seq"] for e in seen] + [e["seq"] for e in rest]
        assert seqs == list(range(1, len(seqs) + 1)), "every event exactly once, in order"
        assert rest[-1]["type"] == "run_finish"
        # After the run: the store's event log serves the same events.
        with c.stream("GET", f"/v1/runs/{run_id}/events?after=0") as r:
            again = agent_events(r)
        assert [e["seq"] for e in again] == list(range(1, len(seqs) + 1))


def test_approval_round_trip_and_cancel_of_waiting_run(server: Served) -> None:
    with server.client() as c:
        tid = _thread(c)
        r = c.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "delete x"})
        waiting = r.json()
        assert waiting["phase"] == "waiting"
        ticket = waiting["tickets"][0]["ticket_id"]
        pending = c.get(f"/v1/runs/{waiting['run_id']}").json()["pending_tickets"]
        assert [t["ticket_id"] for t in pending] == [ticket]
        r = c.post(
            f"/v1/runs/{waiting['run_id']}/resume",
            json={
                "decisions": [{"ticket_id": ticket, "decision": {"kind": "approve"}}],
                "stream": True,
            },
        )
        events = agent_events(r)
        done = [e for e in events if e["type"] == "tool_call_done"]
        assert done[0]["output"] == "deleted /tmp/x.txt"
        assert events[-1]["final_text"] == "Result: deleted /tmp/x.txt. All done."
        audit = c.get(f"/v1/threads/{tid}").json()["state"]["permissions.audit"]
        assert [e["by"] for e in audit.values()] == ["profile:alice"], "the caller, not the body"
        # A second answer to the same ticket is refused.
        r = c.post(
            f"/v1/runs/{waiting['run_id']}/resume",
            json={"decisions": [{"ticket_id": ticket, "decision": {"kind": "approve"}}]},
        )
        assert r.status_code == 409 and r.headers["content-type"] == "application/problem+json"
        # Cancel a waiting run.
        r = c.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "delete y"})
        run_id = r.json()["run_id"]
        assert c.post(f"/v1/runs/{run_id}/cancel").json()["status"] == "cancelled"
        assert c.get(f"/v1/runs/{run_id}").json()["pending_tickets"] == []
        assert c.post(f"/v1/runs/{run_id}/cancel").status_code == 409


def test_publish_history_rollback(server: Served) -> None:
    with server.client() as c:
        config = {"id": "published", "model_binding": "echo-model", "instructions": "v1"}
        r = c.post("/v1/agents", json={"config": config, "note": "first"})
        assert r.status_code == 201, r.text
        assert r.json()["version"] == 1
        v2 = c.post("/v1/agents", json={"config": {**config, "instructions": "v2"}}).json()
        assert v2["version"] == 2
        agents = {a["id"]: a for a in c.get("/v1/agents").json()["agents"]}
        assert agents["published"]["config_version"] == 2
        tid = _thread(c)
        run = c.post(
            f"/v1/threads/{tid}/runs", json={"agent_id": "published", "input": "hi"}
        ).json()
        assert run["final_text"] == "(echo) hi"
        assert c.get(f"/v1/runs/{run['run_id']}").json()["config_version"] == 2
        back = c.post("/v1/agents/published/rollback", json={"version": 1}).json()
        assert back["version"] == 3 and back["config"]["instructions"] == "v1"
        history = c.get("/v1/agents/published/versions").json()["versions"]
        assert [v["version"] for v in history] == [1, 2, 3]
        # A config that does not resolve is refused and the old one keeps serving.
        bad = c.post("/v1/agents", json={"config": {**config, "model_binding": "nope"}})
        assert bad.status_code == 409 and bad.json()["field"] == "/config"
        agents = {a["id"]: a for a in c.get("/v1/agents").json()["agents"]}
        assert agents["published"]["config_version"] == 3


def test_events_of_a_resumed_run_span_both_legs(server: Served) -> None:
    with server.client() as c:
        tid = _thread(c)
        waiting = c.post(
            f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "delete"}
        )
        run_id, ticket = waiting.json()["run_id"], waiting.json()["tickets"][0]["ticket_id"]
        approve = {"decisions": [{"ticket_id": ticket, "decision": {"kind": "approve"}}]}
        with c.stream("POST", f"/v1/runs/{run_id}/resume", json={**approve, "stream": True}) as r:
            leg = agent_events(r)
        assert leg[0]["seq"] > 1, "the resume leg goes on from the parked seq"
        # The resumed leg is still buffered: a reader from 0 gets the first leg from the log.
        with c.stream("GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "0"}) as r:
            every = agent_events(r)
        assert [e["seq"] for e in every] == list(range(1, len(every) + 1))
        assert [e["type"] for e in every].count("run_start") == 2


def test_a_wrong_resume_decision_names_the_expected_shape(server: Served) -> None:
    with server.client() as client:
        thread = client.post("/v1/threads", json={"agent_id": "assistant"}).json()["thread_id"]
        run = client.post(
            f"/v1/threads/{thread}/runs", json={"agent_id": "assistant", "input": "hi"}
        ).json()["run_id"]
        wrong = client.post(
            f"/v1/runs/{run}/resume", json={"decisions": [{"ticket_id": "t", "decision": "yes"}]}
        )
    assert wrong.status_code == 422
    problem = wrong.json()
    assert problem["field"].startswith("body/decisions/0/decision")
    assert '{"kind": "approve"}' in problem["fix"] and '"kind": "respond"' in problem["fix"]
