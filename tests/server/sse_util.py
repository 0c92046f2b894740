"""Reading SSE responses in tests (a small parser over httpx's line iterator)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


def sse_events(response: httpx.Response) -> Iterator[tuple[str | None, str | None, str]]:
    """``(id, event, data)`` of each SSE event of a streamed response."""
    ev_id: str | None = None
    name: str | None = None
    data: list[str] = []
    for line in response.iter_lines():
        if not line:
            if data:
                yield ev_id, name, "\n".join(data)
            ev_id, name, data = None, None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "id":
            ev_id = value
        elif field == "event":
            name = value
        elif field == "data":
            data.append(value)


def agent_events(response: httpx.Response) -> list[dict[str, Any]]:
    """The AgentEvents of a neutral SSE stream."""
    return [json.loads(data) for _, _, data in sse_events(response)]
