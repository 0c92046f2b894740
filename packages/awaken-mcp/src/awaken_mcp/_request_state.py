"""The ``request_state`` of an ``InputRequiredResult``: which parked run a retry answers.

On 2026-07-28 connections a call whose run parks answers with an
``InputRequiredResult``; the client retries the same ``tools/call`` with the
answers and this state, verbatim. The state names the tool, the thread, the
run, the tickets and the caller's profile, and is signed (HMAC-SHA256) with
the server's secret, so a retry can only answer the tickets this server
handed to this profile for this tool: a forged, edited or borrowed state
(another key's) is refused before anything is read or changed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import asdict, dataclass

__all__ = ["BadState", "Pending", "open_state", "seal_state"]


class BadState(ValueError):
    """A ``request_state`` this server did not issue to this caller for this tool."""


@dataclass(frozen=True)
class Pending:
    """A parked run the client is asked to answer."""

    tool: str
    """The MCP tool name the client called."""
    agent: str
    thread: str
    run: str
    tickets: tuple[str, ...]
    profile: str
    direct: bool
    """A directly called tool (its run's turns are given), not an agent."""


def _mac(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def seal_state(pending: Pending, secret: bytes) -> str:
    """``pending`` as an opaque, signed string."""
    body = json.dumps(asdict(pending), sort_keys=True, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(body).decode() + "." + _mac(secret, body)


def open_state(state: str, secret: bytes, *, tool: str, profile: str) -> Pending:
    """The pending run ``state`` names; ``BadState`` unless it is this server's, for
    ``tool``, issued to ``profile``."""
    encoded, _, mac = state.rpartition(".")
    try:
        body = base64.urlsafe_b64decode(encoded.encode())
    except ValueError:
        raise BadState("request_state is not one this server issued") from None
    if not encoded or not hmac.compare_digest(_mac(secret, body), mac):
        raise BadState("request_state is not one this server issued (or it was altered)")
    data = json.loads(body)
    pending = Pending(**{**data, "tickets": tuple(data["tickets"])})
    if pending.tool != tool:
        raise BadState(f"request_state belongs to tool {pending.tool!r}, not {tool!r}")
    if pending.profile != profile:
        # Said the same way as an unknown state: whose it is does not leak.
        raise BadState("request_state is not one this server issued to this caller")
    return pending
