"""Agent cards as cacheable HTTP resources, and the index of every card a server has.

A card changes only when the server restarts with other agent files, so it
is served with ``Cache-Control: public, max-age=N``, a strong ``ETag`` (a
hash of the exact body) and ``Last-Modified`` (when the server built it). A
conditional GET answers 304 with no body: ``If-None-Match`` is compared
first (weakly, as RFC 9110 13.1.2 says for GET), and ``If-Modified-Since``
only counts when no ``If-None-Match`` was sent.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import a2a_pb2 as pb
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from awaken_server import Problem, problem_response

__all__ = ["CardIndex", "CardResource"]


def _not_modified(request: Request, etag: str, modified: datetime) -> bool:
    """Whether the request's validators say the client's copy is current."""
    match = request.headers.get("if-none-match")
    if match is not None:
        tags = [t.strip().removeprefix("W/") for t in match.split(",")]
        return "*" in tags or etag.removeprefix("W/") in tags
    since = request.headers.get("if-modified-since")
    if since is None:
        return False
    try:
        when = email.utils.parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False  # an unreadable date is ignored (RFC 9110 13.1.3)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return modified <= when


class CardResource:
    """One agent card: its JSON body and the caching headers that go with it."""

    def __init__(self, card: pb.AgentCard, *, max_age: int, modified: datetime) -> None:
        self.card = card
        self.data: dict[str, Any] = agent_card_to_dict(card)
        body = json.dumps(self.data, separators=(",", ":"), sort_keys=True).encode()
        self.body = body
        self.etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        # HTTP dates have whole seconds; a sub-second part would never compare equal.
        self.modified = modified.astimezone(UTC).replace(microsecond=0)
        self.headers = {
            "Cache-Control": f"public, max-age={max_age}",
            "ETag": self.etag,
            "Last-Modified": email.utils.format_datetime(self.modified, usegmt=True),
        }

    async def respond(self, request: Request) -> Response:
        """GET (or HEAD): the card, or 304 when the client's copy is current."""
        if _not_modified(request, self.etag, self.modified):
            return Response(status_code=304, headers=self.headers)
        return Response(self.body, headers=self.headers, media_type="application/json")


@dataclass(frozen=True, slots=True)
class CardIndex:
    """Where each served agent's card is, for clients that start from the server's root.

    ``listing`` answers ``GET /a2a``: every agent with its endpoint and card
    URL. ``root_card`` answers the well-known card path at the server root
    (and under ``/a2a``, where a client resolving ``.well-known/agent-card.json``
    against ``/a2a/ID`` without a trailing slash lands): the agent's own card
    when the server serves exactly one, else a 404 naming every card URL.
    """

    cards: dict[str, CardResource]
    card_urls: dict[str, str]

    async def listing(self, _request: Request) -> Response:
        """The index of the served agents and their cards."""
        agents = [
            {
                "id": agent_id,
                "name": resource.card.name,
                "description": resource.card.description,
                "url": resource.card.supported_interfaces[0].url,
                "card": self.card_urls[agent_id],
            }
            for agent_id, resource in self.cards.items()
        ]
        return JSONResponse({"agents": agents}, headers={"Cache-Control": "no-cache"})

    async def root_card(self, request: Request) -> Response:
        """The only agent's card, or a 404 that lists the per-agent cards."""
        if len(self.cards) == 1:
            return await next(iter(self.cards.values())).respond(request)
        where = ", ".join(self.card_urls.values())
        return problem_response(
            Problem(
                404,
                "agent-card-per-agent",
                f"this server serves {len(self.cards)} agents, each with its own card: {where}",
                field=f"path:{request.url.path}",
                fix="fetch the card of one agent (GET /a2a lists them), or resolve "
                "'.well-known/agent-card.json' against the agent URL with a trailing slash",
            )
        )
