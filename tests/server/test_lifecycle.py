"""Limits, cancellation and shutdown of a real server; the CLI's refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from srv_util import ALICE, BOB, HERE, Served, start_server, stop_server
from sse_util import agent_events, sse_events


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = start_server(tmp_path_factory.mktemp("capped"), "--max-runs-per-key", "2")
    yield served
    stop_server(served)


def _thread(c: httpx.Client) -> str:
    return str(c.post("/v1/threads", json={"agent_id": "assistant"}).json()["thread_id"])


def _slow(c: httpx.Client, tid: str) -> httpx.Response:
    request = c.build_request(
        "POST",
        f"/v1/threads/{tid}/runs",
        json={"agent_id": "assistant", "input": "slow", "stream": True},
    )
    return c.send(request, stream=True)


def test_per_key_cap_on_concurrent_runs(capped: Served) -> None:
    with capped.client(ALICE) as alice, capped.client(BOB) as bob:
        open_ = [_slow(alice, _thread(alice)) for _ in range(2)]
        try:
            for r in open_:
                assert r.status_code == 200
            third = alice.post(
                f"/v1/threads/{_thread(alice)}/runs", json={"agent_id": "assistant", "input": "hi"}
            )
            assert third.status_code == 429 and third.headers["retry-after"] == "1"
            assert third.json()["title"] == "too many runs"
            # Another key has its own budget.
            other = bob.post(
                f"/v1/threads/{_thread(bob)}/runs", json={"agent_id": "assistant", "input": "hi"}
            )
            assert other.status_code == 200
        finally:
            for r in open_:
                list(r.iter_lines())
                r.close()
        again = alice.post(
            f"/v1/threads/{_thread(alice)}/runs", json={"agent_id": "assistant", "input": "hi"}
        )
        assert again.status_code == 200, "finished runs give their slot back"


def test_cancel_a_live_run(capped: Served) -> None:
    with capped.client() as c:
        tid = _thread(c)
        r = _slow(c, tid)
        stream = sse_events(r)
        seen = [json.loads(next(stream)[2]) for _ in range(3)]
        run_id = seen[0]["run_id"]
        cancel = c.post(f"/v1/runs/{run_id}/cancel")
        assert cancel.status_code == 202 and cancel.json()["status"] == "cancelling"
        rest = [json.loads(d) for _, _, d in stream]
        r.close()
        assert rest[-1]["type"] == "run_finish" and rest[-1]["end_cause"]["kind"] == "cancelled"
        # The thread is free again.
        after = c.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "hi"})
        assert after.json()["final_text"] == "Hello! You said: hi"


def test_sigterm_mid_run_checkpoints_and_releases_the_thread(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'kept.db'}"
    served = start_server(tmp_path, store=store)
    with served.client() as c:
        tid = _thread(c)
        r = _slow(c, tid)
        first = []
        for _, _, data in sse_events(r):
            first.append(json.loads(data))
            if len(first) == 4:
                break
        run_id = first[0]["run_id"]
        served.process.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal (exit status -SIGTERM).
        assert served.process.wait(30) == -signal.SIGTERM
        r.close()
    # Same store, new process: the run was checkpointed as cancelled and the lease released.
    again = start_server(tmp_path, store=store)
    try:
        with again.client() as c:
            run = c.get(f"/v1/runs/{run_id}").json()
            assert run["record"]["phase"] == "ended"
            assert run["record"]["end_cause"]["kind"] == "cancelled"
            with c.stream("GET", f"/v1/runs/{run_id}/events") as ev:
                logged = agent_events(ev)
            assert [e["seq"] for e in logged] == list(range(1, len(logged) + 1))
            assert logged[-1]["type"] == "run_finish"
            after = c.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "hi"})
            assert after.status_code == 200 and after.json()["phase"] == "ended"
    finally:
        stop_server(again)


def _serve(*args: str, keys: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AWAKEN_SERVER_KEYS"}
    if keys is not None:
        env["AWAKEN_SERVER_KEYS"] = keys
    cmd = [sys.executable, "-m", "awaken_server", "--agents", str(HERE / "agents"), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "keys", "message"),
    [
        (("--no-auth", "--host", "0.0.0.0"), None, "--no-auth is refused on '0.0.0.0'"),
        ((), None, "no keys: give --keys FILE or set AWAKEN_SERVER_KEYS"),
        ((), "short:alice", "use at least 16 random characters"),
        ((), "a-long-enough-key-123:bad profile!", "has profile 'bad profile!'"),
        ((), "a-long-enough-key-123:a,a-long-enough-key-123:b", "entries 1 and 2 repeat a key"),
        (("--keys", "/nonexistent/keys"), None, "cannot read keys file"),
        (("--setup", "nomodule"), "a-long-enough-key-123:a", "write MODULE:FUNCTION"),
    ],
)
def test_cli_refuses_unsafe_or_broken_options(
    args: tuple[str, ...], keys: str | None, message: str
) -> None:
    done = _serve(*args, keys=keys)
    assert done.returncode == 2
    assert message in done.stderr


def test_serve_is_a_subcommand_of_awaken() -> None:
    awaken = Path(sys.executable).with_name("awaken")  # the runtime's console script
    done = subprocess.run(
        [str(awaken), "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "--agents" in done.stdout and "--no-auth" in done.stdout


@pytest.fixture(scope="module")
def cors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = start_server(tmp_path_factory.mktemp("cors"), "--cors-origin", "https://app.example")
    yield served
    stop_server(served)


def _preflight(url: str, origin: str) -> httpx.Response:
    return httpx.options(
        f"{url}/v1/agents/assistant/chat",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )


def test_cors_is_off_by_default(server: Served) -> None:
    r = _preflight(server.url, "https://app.example")
    assert "access-control-allow-origin" not in r.headers
    got = httpx.get(
        f"{server.url}/v1/agents",
        headers={"Origin": "https://app.example", "Authorization": f"Bearer {ALICE}"},
    )
    assert "access-control-allow-origin" not in got.headers


def test_cors_allows_only_the_configured_origin(cors: Served) -> None:
    ok = _preflight(cors.url, "https://app.example")
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()
    other = _preflight(cors.url, "https://evil.example")
    assert other.headers.get("access-control-allow-origin") != "https://evil.example"
    got = httpx.get(
        f"{cors.url}/v1/agents",
        headers={"Origin": "https://app.example", "Authorization": f"Bearer {ALICE}"},
    )
    assert got.headers["access-control-allow-origin"] == "https://app.example"


def test_litellm_is_warmed_up_before_the_first_request(tmp_path: Path) -> None:
    served = start_server(tmp_path, agents=HERE / "agents_litellm")
    try:
        assert httpx.get(f"{served.url}/healthz").json() == {
            "status": "ok",
            "warmed": ["litellm"],
            "auth": True,
        }
    finally:
        stop_server(served)


def test_no_warm_up_without_a_provider_that_needs_it(server: Served) -> None:
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok", "warmed": [], "auth": True}


def test_two_servers_on_one_store_share_owners(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    first = start_server(tmp_path, store=store)
    second = start_server(tmp_path, store=store)
    try:
        with first.client(ALICE) as a1, second.client(ALICE) as a2, second.client(BOB) as b2:
            tid = _thread(a1)
            run = a1.post(f"/v1/threads/{tid}/runs", json={"agent_id": "assistant", "input": "hi"})
            run_id = run.json()["run_id"]
            # The second process learns of them from the store, for the owner only.
            assert a2.get(f"/v1/threads/{tid}").json()["runs"] == [run_id]
            assert a2.get(f"/v1/runs/{run_id}").json()["record"]["phase"] == "ended"
            assert tid in [t["thread_id"] for t in a2.get("/v1/threads").json()["threads"]]
            assert b2.get(f"/v1/threads/{tid}").status_code == 404
            assert b2.get(f"/v1/runs/{run_id}").status_code == 404
    finally:
        stop_server(first)
        stop_server(second)
