"""``awaken serve --ingress``: the web tier submits runs and follows them; workers run them.

A real ``awaken serve`` and real ``awaken worker`` processes share one PostgreSQL
store and queue (schemas of their own per test). Nothing runs in the server:
a run sent before any worker is up waits, and streams once a worker takes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from srv_util import HERE, Served, start_server, stop_server
from sse_util import agent_events

DSN_ENV = "AWAKEN_TEST_POSTGRES_DSN"


class Cluster:
    """One server in ingress mode and the workers started for it."""

    def __init__(self, tmp: Path, dsn: str) -> None:
        tag = os.urandom(5).hex()
        self.dsn, self.queue = dsn, f"srv_q_{tag}"
        self.store = f"{dsn}?schema=srv_s_{tag}&lease_ttl=2"
        self.tmp = tmp
        self.workers: list[subprocess.Popen[bytes]] = []
        self.server: Served | None = None

    def serve(self) -> Served:
        self.server = start_server(
            self.tmp, "--ingress", self.dsn, "--ingress-schema", self.queue, store=self.store
        )
        return self.server

    def worker(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        log = (self.tmp / f"worker-{len(self.workers)}.log").open("wb")
        cmd = [
            sys.executable, "-m", "awaken_run_ingress", "worker",
            "--queue", self.dsn, "--schema", self.queue, "--store", self.store,
            "--agents", str(HERE / "agents" / "assistant.toml"),
            "--setup", "setup_agents:setup", "--heartbeat-timeout", "2",
        ]  # fmt: skip
        process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(process)
        return process

    def close(self) -> None:
        for process in self.workers:
            process.terminate()
        for process in self.workers:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        if self.server is not None:
            stop_server(self.server)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for schema in (self.queue, self.store.split("schema=")[1].split("&")[0]):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    dsn = os.environ.get(DSN_ENV)
    if not dsn:
        pytest.skip(f"{DSN_ENV} is not set (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    found = Cluster(tmp_path, dsn)
    try:
        yield found
    finally:
        found.close()


def _thread(c: httpx.Client) -> str:
    r = c.post("/v1/threads", json={"agent_id": "assistant"})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


def _stream(c: httpx.Client, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with c.stream("POST", path, json={**body, "stream": True}) as r:
        assert r.status_code == 200, r.read()
        return agent_events(r)


def test_runs_wait_for_a_worker_then_stream_from_its_event_log(cluster: Cluster) -> None:
    served = cluster.serve()
    with served.client() as c:
        tid = _thread(c)
        got: list[list[dict[str, Any]]] = []
        streaming = threading.Thread(
            target=lambda: got.append(
                _stream(c, f"/v1/threads/{tid}/runs", {"agent_id": "assistant", "input": "slow"})
            )
        )
        streaming.start()
        time.sleep(2.0)
        assert got == [] and c.get(f"/v1/threads/{tid}").json()["messages"] == [], (
            "the run ran in the server"
        )
        cluster.worker()
        streaming.join(90)
        assert got, "the stream never finished"
        events = got[0]
        seqs = [e["seq"] for e in events if e["run_id"] == events[0]["run_id"]]
        assert seqs == list(range(1, len(seqs) + 1)), "every event once, in order"
        assert events[0]["type"] == "run_start" and events[-1]["type"] == "run_finish"
        assert events[-1]["phase"] == "ended" and events[-1]["final_text"]
        run_id = events[0]["run_id"]
        # A reconnect after the run reads the same log.
        with c.stream("GET", f"/v1/runs/{run_id}/events?after=3") as r:
            assert [e["seq"] for e in agent_events(r)] == seqs[3:]
        thread = c.get(f"/v1/threads/{tid}").json()
        assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]


def test_an_approval_and_a_cancel_go_through_the_queue(cluster: Cluster) -> None:
    served = cluster.serve()
    cluster.worker()
    with served.client() as c:
        tid = _thread(c)
        first = _stream(
            c, f"/v1/threads/{tid}/runs", {"agent_id": "assistant", "input": "delete x"}
        )
        finish = first[-1]
        assert finish["type"] == "run_finish" and finish["phase"] == "waiting"
        run_id, ticket = finish["run_id"], finish["tickets"][0]["ticket_id"]
        decision = {"ticket_id": ticket, "decision": {"kind": "approve"}}
        legs = _stream(c, f"/v1/runs/{run_id}/resume", {"decisions": [decision]})
        assert legs[0]["seq"] == finish["seq"] + 1, "the resumed leg continues the numbering"
        done = [e for e in legs if e["type"] == "tool_call_done"]
        assert done[0]["output"] == "deleted /tmp/x.txt"
        assert legs[-1]["phase"] == "ended"
        assert legs[-1]["final_text"] == "Result: deleted /tmp/x.txt. All done."
        # The same answer again is refused by the server (nothing is queued).
        again = c.post(f"/v1/runs/{run_id}/resume", json={"decisions": [decision]})
        assert again.status_code == 409
        # A waiting run cancelled through the queue ends cancelled, on the worker.
        r = c.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "delete y"})
        waiting = r.json()
        assert waiting["phase"] == "waiting", waiting
        assert c.post(f"/v1/runs/{waiting['run_id']}/cancel").json()["status"] == "cancelling"
        deadline = time.monotonic() + 60
        record: dict[str, Any] = {}
        while time.monotonic() < deadline:
            record = c.get(f"/v1/runs/{waiting['run_id']}").json()["record"] or {}
            if record.get("phase") == "ended":
                break
            time.sleep(0.2)
        assert record.get("end_cause", {}).get("kind") == "cancelled", record
        assert c.post(f"/v1/runs/{waiting['run_id']}/cancel").status_code == 409


def test_ingress_mode_refuses_a_store_other_processes_cannot_follow(tmp_path: Path) -> None:
    cmd = [
        sys.executable, "-m", "awaken_server", "--no-auth",
        "--store", f"sqlite:///{tmp_path / 'a.db'}", "--ingress", "postgresql://x@127.0.0.1/x",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--ingress needs a store whose event log other processes can follow" in proc.stderr
