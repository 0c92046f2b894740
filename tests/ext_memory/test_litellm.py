"""LiteLLMEmbedder against a local OpenAI-compatible /v1/embeddings server.

The server runs on 127.0.0.1 in a thread; nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np
import pytest

from awaken_ext_memory import HashingEmbedder, LiteLLMEmbedder, MemoryConfig, MemoryPlugin
from awaken_runtime import ProviderAuthError, ProviderUnavailable, RetryPolicy

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
