"""The SDK's JSON-RPC endpoint with awaken's two additions at the HTTP edge.

- **Content-Type.** A request body that is not JSON by its declared type
  (``text/plain``, a form) is refused with the A2A error
  ``ContentTypeNotSupportedError`` (-32005), naming the type and the fix;
  the SDK would try to parse it and answer a bare parse error. A request
  without a Content-Type is left to the SDK (it parses the body).
- **Whole numbers.** Metadata and data parts are protobuf ``Struct`` values,
  where every number is a double, so the SDK writes ``3`` as ``3.0`` and a
  JSON reader gets a float back. Responses (a JSON body or each SSE event)
  are written with whole numbers as integers, as other A2A implementations
  (protobuf's Go and JavaScript JSON) do; the value is the same JSON number.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.errors import ContentTypeNotSupportedError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ._camel import whole_numbers

__all__ = ["json_endpoint"]

Endpoint = Callable[[Request], Awaitable[Response]]


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _refuse(content_type: str) -> Response:
    error = ContentTypeNotSupportedError(
        f"Content-Type {content_type!r} is not supported: send the JSON-RPC request as "
        f"application/json"
    )
    return JSONResponse(build_error_response(None, error))


def _whole(text: str, separators: tuple[str, str] | None = None) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text  # not JSON: passed on as the SDK wrote it
    return json.dumps(whole_numbers(data), ensure_ascii=False, separators=separators)


async def _events(source: AsyncIterator[Any]) -> AsyncIterator[Any]:
    try:
        async for item in source:
            if isinstance(item, dict) and isinstance(item.get("data"), str):
                item = {**item, "data": _whole(item["data"])}
            yield item
    finally:
        # Closing this wrapper (a client that went away) must close the SDK's stream too.
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()


def json_endpoint(endpoint: Endpoint) -> Endpoint:
    """``endpoint`` (the SDK's JSON-RPC handler) behind the checks of the module docstring."""

    async def handle(request: Request) -> Response:
        content_type = request.headers.get("content-type")
        if content_type is not None and not _is_json(content_type):
            return _refuse(content_type)
        response = await endpoint(request)
        if isinstance(response, JSONResponse):
            body = bytes(response.body)
            rewritten = _whole(body.decode(), (",", ":")).encode()
            if rewritten != body:
                response.body = rewritten
                response.headers["content-length"] = str(len(rewritten))
        elif hasattr(response, "body_iterator"):
            # sse-starlette's EventSourceResponse: one dict per event, "data" already JSON.
            response.body_iterator = _events(response.body_iterator)
        return response

    return handle
