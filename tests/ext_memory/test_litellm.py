"""LiteLLMEmbedder against a local OpenAI-compatible /v1/embeddings server.

The server runs on 127.0.0.1 in a thread; nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np
import pytest

from awaken_ext_memory import HashingEmbedder, LiteLLMEmbedder, MemoryConfig, MemoryPlugin
from awaken_runtime import (
    ProviderAuthError,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RetryPolicy,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
pytest.importorskip("litellm", reason="litellm is not installed: pip install litellm")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REFERENCE = HashingEmbedder(16)


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []
    fail_status: ClassVar[int | None] = None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {
                "path": self.path,
                "body": body,
                "auth": self.headers.get("Authorization"),
                "sdk_retry": self.headers.get("x-stainless-retry-count"),
            }
        )
        if type(self).fail_status is not None:
            error = json.dumps({"error": {"message": "overloaded", "type": "server_error"}})
            self.send_response(type(self).fail_status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(error)))
            self.end_headers()
            self.wfile.write(error.encode())
            return
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = REFERENCE.embed(inputs)
        # Answer out of order: the embedder must sort by index.
        data = [
            {"object": "embedding", "index": i, "embedding": vectors[i].tolist()}
            for i in reversed(range(len(inputs)))
        ]
        payload = json.dumps(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.requests = []
    _Handler.fail_status = None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_embeddings_through_litellm(server: str) -> None:
    embedder = LiteLLMEmbedder(
        "openai/text-embedding-3-small", api_base=server, api_key="sk-test", batch_size=2
    )
    texts = ["window seats", "peanut allergy", "my cat Miso"]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 16)
    np.testing.assert_allclose(vectors, REFERENCE.embed(texts), atol=1e-6)
    assert embedder.dim == 16
    assert embedder.id == "litellm:openai/text-embedding-3-small"
    assert [len(r["body"]["input"]) for r in _Handler.requests] == [2, 1]
    first = _Handler.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["body"]["model"] == "text-embedding-3-small"
    assert first["auth"] == "Bearer sk-test"


def test_dim_is_probed_when_not_given(server: str) -> None:
    embedder = LiteLLMEmbedder("openai/text-embedding-3-small", api_base=server, api_key="k")
    assert embedder.dim == 16
    assert len(_Handler.requests) == 1


async def test_plugin_config_builds_a_litellm_embedder(server: str, tmp_path: Any) -> None:
    plugin = MemoryPlugin()
    config = MemoryConfig(
        embedder="litellm",
        model="openai/text-embedding-3-small",
        litellm_options={"api_base": server, "api_key": "k"},
        cache_dir=str(tmp_path),
    )
    bank = plugin.bank_for(config)
    assert isinstance(bank.embedder, LiteLLMEmbedder)
    vectors = await bank.embed(["hello there"])
    assert vectors.shape == (1, 16)


@pytest.mark.parametrize("retries", [0, 2])
def test_a_failing_call_makes_exactly_the_policys_requests(
    server: str, retries: int, capsys: pytest.CaptureFixture[str]
) -> None:
    _Handler.fail_status = 503
    policy = RetryPolicy(max_retries=retries, initial_delay_s=0.001, jitter=0.0)
    embedder = LiteLLMEmbedder(
        "openai/text-embedding-3-small", api_base=server, api_key="k", dim=16, retry=policy
    )
    with pytest.raises(ProviderUnavailable) as info:
        embedder.embed(["hello"])
    assert len(_Handler.requests) == retries + 1  # no hidden SDK retries on top
    assert {r["sdk_retry"] for r in _Handler.requests} <= {None, "0"}
    assert info.value.status == 503 and info.value.attempts == retries + 1
    assert info.value.error_class == "server" and info.value.model.endswith("3-small")
    out = capsys.readouterr()
    assert "Give Feedback" not in out.out + out.err


def test_auth_errors_are_typed_and_not_retried(server: str) -> None:
    _Handler.fail_status = 401
    embedder = LiteLLMEmbedder(
        "openai/text-embedding-3-small", api_base=server, api_key="bad", dim=16
    )
    with pytest.raises(ProviderAuthError) as info:
        embedder.embed(["hello"])
    assert len(_Handler.requests) == 1 and info.value.status == 401


# -- the total deadline: a silent endpoint never stalls a recall ---------------------------


class _Silent:
    """A TCP server on 127.0.0.1 that accepts, reads, and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            self.accepted.append(conn)  # held open, never answered

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent() -> Iterator[_Silent]:
    server = _Silent()
    try:
        yield server
    finally:
        server.close()


def test_the_default_deadline_is_at_most_30_seconds() -> None:
    embedder = LiteLLMEmbedder("openai/text-embedding-3-small", api_key="k", dim=16)
    executor = embedder._executor
    assert executor.deadline_s is not None and executor.deadline_s <= 30.0
    assert executor.timeout_s <= executor.deadline_s


def test_a_silent_endpoint_gives_up_at_the_deadline_with_a_typed_error(silent: _Silent) -> None:
    # Each attempt alone could wait 60 s and 5 retries follow: only the deadline ends it.
    policy = RetryPolicy(max_retries=5, initial_delay_s=0.01, jitter=0.0)
    embedder = LiteLLMEmbedder(
        "openai/text-embedding-3-small",
        api_base=silent.url,
        api_key="k",
        dim=16,
        retry=policy,
        timeout_s=60.0,
        deadline_s=0.5,
    )
    started = time.monotonic()
    with pytest.raises(ProviderTimeout) as info:
        embedder.embed(["hello"])
    elapsed = time.monotonic() - started
    assert "deadline of 0.5s" in str(info.value) and "deadline_s" in str(info.value)
    assert info.value.error_class == "timeout" and info.value.attempts >= 1
    assert len(silent.accepted) == info.value.attempts  # no attempt after the deadline
    assert elapsed < 10 * 0.5 + 5  # generous: far below one attempt's 60 s timeout


def _failing(server: str, policy: RetryPolicy, deadline_s: float | None = None) -> Any:
    """An embedder on the local server (answering 503) with ``policy`` and ``deadline_s``."""
    _Handler.fail_status = 503
    return LiteLLMEmbedder(
        "openai/text-embedding-3-small",
        api_base=server,
        api_key="k",
        dim=16,
        retry=policy,
        deadline_s=deadline_s,
    )


def test_backoff_that_would_pass_the_deadline_is_not_waited_out(server: str) -> None:
    _Handler.fail_status = 503
    # 10 retries 0.3 s apart would take 3 s; the deadline allows about two of them.
    policy = RetryPolicy(max_retries=10, initial_delay_s=0.3, multiplier=1.0, jitter=0.0)
    embedder = _failing(server, policy, 0.7)
    with pytest.raises(ProviderError) as info:
        embedder.embed(["hello"])
    # A 503 after a retry or two; on a loaded machine an attempt may be cut by the deadline.
    assert isinstance(info.value, (ProviderUnavailable, ProviderTimeout))
    assert "gave up at the call's deadline of 0.7s" in str(info.value)
    assert 1 <= info.value.attempts < 11
    assert len(_Handler.requests) == info.value.attempts


def test_no_deadline_keeps_the_policys_attempts(server: str) -> None:
    _Handler.fail_status = 503
    embedder = _failing(server, RetryPolicy(max_retries=3, initial_delay_s=0.001, jitter=0.0))
    with pytest.raises(ProviderUnavailable) as info:
        embedder.embed(["hello"])
    assert info.value.attempts == 4 and "gave up after 4 attempts" in str(info.value)
