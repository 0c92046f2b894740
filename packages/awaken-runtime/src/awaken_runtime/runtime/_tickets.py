"""Reading and checking what a resume is given: tickets and decisions.

A resume is accepted only when every ticket matches its stored copy field for
field, is pending, unexpired and due; otherwise ``ResumeRejected`` names the
ticket and what is wrong, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from ..suspension._suspension import (
    Approve,
    Decision,
    Deny,
    ParkedRun,
    Replay,
    Respond,
    ResumeRejected,
    ResumeTicket,
    decision_adapter,
)

__all__ = ["TicketLike", "check_tickets", "parse_decision", "parse_ticket"]

TicketLike = ResumeTicket | dict[str, Any] | str


def parse_ticket(value: TicketLike) -> ResumeTicket:
    """A ticket from its model, JSON text or dict; malformed: ``ResumeRejected``."""
    try:
        if isinstance(value, ResumeTicket):
            return value
        if isinstance(value, str):
            return ResumeTicket.model_validate_json(value)
        return ResumeTicket.model_validate(value)
    except ValidationError as exc:
        raise ResumeRejected(f"malformed ticket: {exc.errors()[0]['msg']}") from None


def parse_decision(value: Any) -> Decision:
    """A decision from its model, JSON text or dict; malformed: ``ResumeRejected``."""
    if isinstance(value, (Approve, Deny, Respond, Replay)):
        return value
    try:
        if isinstance(value, (str, bytes)):
            return decision_adapter.validate_json(value)
        return decision_adapter.validate_python(value)
    except ValidationError as exc:
        raise ResumeRejected(
            f"malformed decision {value!r}: {exc.errors()[0]['msg']}; give Approve(), "
            f"Deny(reason), Respond(value) or Replay(arguments)"
        ) from None


def check_tickets(parked: ParkedRun, thread_id: str, tickets: Sequence[ResumeTicket]) -> None:
    """Raise ``ResumeRejected`` unless every ticket is pending, intact, unexpired and due."""
    pending = {t.ticket_id: t for t in parked.tickets}
    seen: set[str] = set()
    now = datetime.now(UTC)
    for given in tickets:
        if given.ticket_id in seen:
            raise ResumeRejected(f"ticket {given.ticket_id!r} is answered twice")
        seen.add(given.ticket_id)
        stored = pending.get(given.ticket_id)
        if stored is None:
            raise ResumeRejected(
                f"ticket {given.ticket_id!r} is not pending on thread {thread_id!r} "
                f"(already resolved, or from another run)"
            )
        field = stored.mismatch(given)
        if field is not None:
            raise ResumeRejected(
                f"ticket {given.ticket_id!r}: field {field!r} does not match the stored ticket"
            )
        if stored.is_expired(now):
            raise ResumeRejected(
                f"ticket {given.ticket_id!r} expired at {stored.deadline.isoformat()}"  # type: ignore[union-attr]
            )
        if stored.not_before is not None and now < stored.not_before:
            raise ResumeRejected(
                f"ticket {given.ticket_id!r} is scheduled for {stored.not_before.isoformat()}"
                f"; resume it then"
            )
