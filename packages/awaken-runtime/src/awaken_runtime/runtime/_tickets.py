"""Reading and checking what a resume is given: tickets and decisions.

A resume is accepted only when every ticket matches its stored copy field for
field, is pending, unexpired and due; otherwise ``ResumeRejected`` names the
ticket and what is wrong, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from ..agents._resolve import ResolvedAgent
from ..stores._thread_store import ScopeBinding, ThreadSnapshot, ThreadStore
from ..suspension._decisions import Approve, Decision, Deny, Replay, Respond, decision_adapter
from ..suspension._suspension import ParkedRun, ResumeRejected, ResumeTicket

__all__ = [
    "TicketLike",
    "check_fingerprint",
    "check_resume",
    "check_tickets",
    "load_parked",
    "parse_decision",
    "parse_ticket",
]

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


def check_fingerprint(parked: ParkedRun, now: str) -> None:
    """Raise ``ResumeRejected`` if the agent no longer resolves to what the run parked with."""
    if now != parked.fingerprint:
        raise ResumeRejected(
            f"agent {parked.agent_id!r} changed since the run parked (fingerprint "
            f"{parked.fingerprint[:12]}… then, {now[:12]}… now): "
            f"its tools, plugins, plugin config or model differ; start a new run"
        )


async def load_parked(store: ThreadStore, thread_id: str) -> tuple[ThreadSnapshot, ParkedRun]:
    """The snapshot (bound to the waiting run's scopes) and its parked record.

    Whatever is checked and claimed afterwards comes from this one
    snapshot: checking one version and claiming against another would let
    two resumers both pass the check and both claim.
    """
    default = ScopeBinding(thread_id, "default", "default")
    snapshot = await store.load(default)
    parked = snapshot.parked
    if parked is not None and (parked.profile_id, parked.namespace) != ("default", "default"):
        # The run binds other scopes: reload with them, then trust only this load.
        snapshot = await store.load(ScopeBinding(thread_id, parked.profile_id, parked.namespace))
        again = snapshot.parked
        if again is not None and (again.profile_id, again.namespace) != (
            parked.profile_id,
            parked.namespace,
        ):
            raise ResumeRejected(
                f"thread {thread_id!r} was resumed or re-parked while this resume "
                f"loaded it; load its tickets again"
            )
        parked = again
    if parked is None:
        raise ResumeRejected(
            f"thread {thread_id!r} has no waiting run (already resumed, cancelled, or never parked)"
        )
    return snapshot, parked


def check_resume(
    resolve: Callable[[str], ResolvedAgent],
    thread_id: str,
    parked: ParkedRun,
    tickets: Sequence[ResumeTicket],
) -> ResolvedAgent:
    """Validate tickets against the stored copies and the agent's fingerprint; the
    agent to resume with, or ``ResumeRejected``."""
    check_tickets(parked, thread_id, tickets)
    try:
        resolved = resolve(parked.agent_id)
    except Exception as exc:
        raise ResumeRejected(f"agent {parked.agent_id!r} no longer resolves: {exc}") from None
    check_fingerprint(parked, resolved.snapshot.fingerprint)
    return resolved
