"""Request plumbing: bounded JSON bodies, the caller, SSE responses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request

from ._keys import Principal
from ._problems import Problem, validation_problem

__all__ = ["caller", "read_body", "sse"]

M = TypeVar("M", bound=BaseModel)


def caller(request: Request) -> Principal:
    """The authenticated caller of ``request`` (set by the auth middleware)."""
    principal: Principal = request.state.principal
    return principal


async def read_json(request: Request) -> Any:
    """The request's JSON, refusing bodies over the limit (413) and non-JSON (400/415)."""
    limit: int = request.app.state.max_body
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    ctype = request.headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() not in ("application/json", ""):
        raise Problem(
            415,
            "unsupported-media-type",
            f"the body is {ctype!r}",
            field="header:Content-Type",
            fix="send application/json",
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)  # chunked bodies are counted as they arrive
        chunks.append(chunk)
    try:
        data = json.loads(b"".join(chunks) or b"null", parse_constant=_no_constant)
    except RecursionError:
        raise _too_deep() from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise Problem(
            400, "malformed-json", f"the body is not JSON: {exc}", field="body", fix="send JSON"
        ) from None
    check_json(data)
    return data


MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a body may have (deeper is refused, 422)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _too_deep() -> Problem:
    return Problem(
        422,
        "body-too-deep",
        f"the body nests arrays and objects more than {MAX_DEPTH} levels deep",
        field="body",
        fix=f"flatten the value to at most {MAX_DEPTH} levels",
    )


def _pointer(path: list[str | int]) -> str:
    # A key may hold the surrogate itself: the answer shows it escaped (\\ud83d).
    text = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)
    return "body" + text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_json(data: Any) -> None:
    """Refuse nesting over :data:`MAX_DEPTH` and lone surrogates (in keys or strings): no
    store keeps them, and each would fail later, deep inside a run (422 naming the place)."""
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise _too_deep()
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_text(key, [*path, key])
                stack.append((item, [*path, key]))
        elif isinstance(value, list):
            stack.extend((item, [*path, i]) for i, item in enumerate(value))


def _check_text(text: str, path: list[str | int]) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Problem(
            422,
            "invalid-text",
            f"{_pointer(path)} holds a lone surrogate at index {exc.start} (not valid Unicode)",
            field=_pointer(path),
            fix="send valid Unicode: pair the surrogate or replace it (U+FFFD)",
        ) from None


def _too_large(limit: int) -> Problem:
    return Problem(
        413,
        "body-too-large",
        f"the body is larger than {limit} bytes",
        field="body",
        fix="send a smaller body (the server's --max-body sets the limit)",
    )


async def read_body(request: Request, model: type[M]) -> M:
    """The request body validated as ``model`` (422 naming the field)."""
    data = await read_json(request)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_problem(exc) from None


def sse(
    events: AsyncIterator[ServerSentEvent], headers: dict[str, str] | None = None
) -> EventSourceResponse:
    """An SSE response (keep-alive comments every 15 s; proxies told not to buffer)."""
    return EventSourceResponse(
        events,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})},
        ping=15,
    )


def last_event_id(request: Request) -> int:
    """Where a reconnecting client left off: ``Last-Event-ID`` or ``?after=`` (0: start)."""
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        value = int(raw)
    except ValueError:
        raise Problem(
            400,
            "invalid-last-event-id",
            f"Last-Event-ID {raw!r} is not an event id",
            field="header:Last-Event-ID",
            fix="send the id of the last event received (an integer seq)",
        ) from None
    if value < 0:
        raise Problem(
            400,
            "invalid-last-event-id",
            "Last-Event-ID is negative",
            field="header:Last-Event-ID",
            fix="send the id of the last event received (an integer seq >= 0)",
        )
    return value
