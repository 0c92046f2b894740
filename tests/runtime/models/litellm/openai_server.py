"""A local OpenAI-compatible chat-completions server for provider tests (stdlib only).

``POST /v1/chat/completions`` (also ``/chat/completions``) answers with the next
queued :class:`Reply`:

* a streamed reply sends ``text/event-stream`` over chunked transfer encoding,
  one ``data: {json}\\n\\n`` event per chunk, exactly as the OpenAI API does:
  a first chunk with ``delta.role``, content / ``reasoning_content`` pieces,
  tool-call fragments (``index``, ``id``, ``type``, ``function.name`` on the
  first fragment of a call, then ``function.arguments`` pieces), a final chunk
  with ``finish_reason``, a usage chunk (``choices: []``) when the request set
  ``stream_options.include_usage``, and ``data: [DONE]``;
* a non-streamed request gets one ``chat.completion`` JSON object;
* an error reply sends ``status`` with OpenAI's ``{"error": {...}}`` body and
  the given headers (e.g. ``Retry-After``);
* a hanging reply sends nothing until the server stops (or ``hang_s`` passes).

Every request (path, headers, JSON body) is recorded in ``server.requests``.
Run it by hand with ``python tests/runtime/models/litellm/openai_server.py`` (it serves a
canned answer forever and prints its base URL).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import zip_longest
from typing import Any

__all__ = ["OpenAIServer", "Recorded", "Reply", "ToolCallSpec", "UsageSpec"]


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call as the model streams it; ``arguments`` is raw text (maybe not JSON)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class UsageSpec:
    """Usage as OpenAI reports it in the last chunk."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def to_openai(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": self.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }


@dataclass(frozen=True)
class Reply:
    """One HTTP answer of the server."""

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ToolCallSpec] = ()
    usage: UsageSpec = field(default_factory=UsageSpec)
    finish_reason: str | None = None
    chunk_size: int = 4
    """Characters per content/reasoning/arguments piece."""
    status: int = 200
    error_message: str = ""
    error_type: str = "server_error"
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hang_s: float = 0.0
    """Send nothing for this long (until the server stops, whichever is first)."""
    delay_s: float = 0.0
    """Pause between streamed chunks."""
    reasoning_field: str = "reasoning_content"
    """The delta field carrying reasoning (DeepSeek/vLLM: ``reasoning_content``)."""
    interleave: bool = False
    """Interleave the argument fragments of parallel calls (some servers do)."""
    stall_after: int | None = None
    """Stop sending (hang) after this many streamed chunks, for ``hang_s`` or 30 s."""
    drop: bool = False
    """Close the connection without answering (a dropped connection)."""

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        type: str = "server_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        return cls(
            status=status,
            error_message=message,
            error_type=type,
            error_code=code,
            headers=dict(headers or {}),
        )

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Reply:
        return cls(hang_s=seconds)


@dataclass(frozen=True)
class Recorded:
    """A request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _pieces(text: str, size: int) -> Iterator[str]:
    if size <= 0:
        size = max(1, len(text))
    for i in range(0, len(text), size):
        yield text[i : i + size]


def stream_chunks(reply: Reply, model: str, include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed ``reply``, in order."""
    cid = "chatcmpl-local"
    created = int(time.time())

    def chunk(
        delta: dict[str, Any], finish: str | None = None, *, choices: bool = True
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_local",
            "choices": (
                [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
                if choices
                else []
            ),
        }
        if include_usage:
            out["usage"] = None
        return out

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in _pieces(reply.reasoning, reply.chunk_size):
        chunks.append(chunk({reply.reasoning_field: piece}))
    for piece in _pieces(reply.text, reply.chunk_size):
        chunks.append(chunk({"content": piece}))
    heads = []
    tails: list[list[dict[str, Any]]] = []
    for index, call in enumerate(reply.tool_calls):
        heads.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        tails.append(
            [
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in _pieces(call.arguments, reply.chunk_size)
            ]
        )
    if reply.interleave:
        chunks.extend(heads)
        for row in zip_longest(*tails):
            chunks.extend(c for c in row if c is not None)
    else:
        for head, tail in zip(heads, tails, strict=True):
            chunks.append(head)
            chunks.extend(tail)
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    chunks.append(chunk({}, finish))
    if include_usage:
        last = chunk({}, choices=False)
        last["usage"] = reply.usage.to_openai()
        chunks.append(last)
    return chunks


def completion_object(reply: Reply, model: str) -> dict[str, Any]:
    """The non-streamed ``chat.completion`` object of ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in reply.tool_calls
        ]
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason
                or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": reply.usage.to_openai(),
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Send each SSE event as it is written, like a real streaming server.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": []})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "bad"}})
            return
        owner = self.server.owner
        owner._record(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "nf"}})
            return
        reply = owner._next_reply()
        if reply.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.hang_s and reply.stall_after is None:
            owner._stopping.wait(reply.hang_s)
            self.close_connection = True
            return
        if reply.status != 200:
            error = {
                "message": reply.error_message,
                "type": reply.error_type,
                "param": None,
                "code": reply.error_code,
            }
            self._send_json(reply.status, {"error": error}, reply.headers)
            return
        model = str(body.get("model", "local"))
        if not body.get("stream"):
            self._send_json(200, completion_object(reply, model), reply.headers)
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for n, item in enumerate(stream_chunks(reply, model, include_usage)):
                if n == reply.stall_after:
                    owner._stopping.wait(reply.hang_s or 30.0)
                    self.close_connection = True
                    return
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                self._chunk(b"data: " + json.dumps(item).encode() + b"\n\n")
            self._chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: OpenAIServer


class OpenAIServer:
    """The server, bound to 127.0.0.1 on an ephemeral port, run in a daemon thread.

    Queue replies with :meth:`add`; when the queue is empty, ``default`` answers
    (a 500 error unless set). Use as a context manager or call start/stop.
    """

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply.error(500, "test server: no reply queued")
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI ``base_url`` / litellm ``api_base`` (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self.requests.clear()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._replies.popleft() if self._replies else self.default

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def start(self) -> OpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":  # pragma: no cover - manual use
    server = OpenAIServer(
        default=Reply(text="Hello from the local test server.", usage=UsageSpec(20, 8))
    )
    server.start()
    print(f"serving OpenAI-compatible chat completions at {server.base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
