"""A follow-up message to an input-required task, read as the decision for one parked call.

An awaken peer sends a data part ``{"ticketId": ..., "decision": {"kind": ...}}``
(the runtime's ``Decision`` JSON, camelCase like every A2A key; ``ticket_id``
is read too). Other A2A clients may send a data part
``{"approved": true}`` or ``{"answer": ...}``, or just text: ``yes`` / ``no``
for a permission ask, any text as the answer to a question. An answer that
does not fit its ticket raises :class:`AnswerError`; the task then stays
input-required and the client is told why (nothing was resumed).
"""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2 as pb
from pydantic import TypeAdapter, ValidationError

from awaken_runtime import Approve, Decision, Deny, Respond, ResumeTicket

from ._camel import from_wire
from ._wire import data_parts, message_text

__all__ = ["AnswerError", "read_answer"]

_DECISION: TypeAdapter[Decision] = TypeAdapter(Decision)
_YES = frozenset({"y", "yes", "approve", "approved", "allow", "ok", "true"})
_NO = frozenset({"n", "no", "deny", "denied", "reject", "false"})


class AnswerError(ValueError):
    """A follow-up that cannot resume the task (names the ticket and the fix)."""


def _innermost_reason(ticket: ResumeTicket) -> str:
    data: dict[str, Any] = ticket.model_dump(mode="json")
    for _ in range(32):
        child = data.get("payload", {}).get("child_ticket")
        if data.get("await_reason") != "delegation" or not isinstance(child, dict):
            break
        data = child
    return str(data.get("await_reason", ""))


def _pick(pending: list[ResumeTicket], wanted: Any) -> ResumeTicket:
    if wanted is None:
        return pending[0]
    for ticket in pending:
        if ticket.ticket_id == wanted:
            return ticket
    raise AnswerError(
        f"ticket {wanted!r} is not waiting on this task (answered already, or never "
        f"issued); pending: {', '.join(t.ticket_id for t in pending)}"
    )


def _from_data(item: dict[str, Any], ticket: ResumeTicket) -> Decision | None:
    if "decision" in item:
        try:
            return _DECISION.validate_python(from_wire(Decision, item["decision"]))
        except ValidationError as exc:
            raise AnswerError(
                f"ticket {ticket.ticket_id!r}: 'decision' is not a decision "
                f"({exc.errors()[0]['msg']}); send {{'kind': 'approve'}}, "
                f"{{'kind': 'deny', 'reason': ...}} or {{'kind': 'respond', 'value': ...}}"
            ) from None
    if isinstance(item.get("approved"), bool):
        reason = str(item.get("reason") or "denied by the A2A client")
        return Approve() if item["approved"] else Deny(reason=reason)
    if "answer" in item:
        return Respond(value=item["answer"])
    return None


def _check_kind(ticket: ResumeTicket, decision: Decision) -> Decision:
    reason = _innermost_reason(ticket)
    if reason == "tool_permission" and decision.kind not in ("approve", "deny"):
        raise AnswerError(
            f"ticket {ticket.ticket_id!r} asks for permission to run "
            f"{ticket.call.name!r}; answer yes or no (a {decision.kind!r} decision does "
            f"not fit it)"
        )
    if reason != "tool_permission" and decision.kind == "approve":
        raise AnswerError(
            f"ticket {ticket.ticket_id!r} asks a question ({reason}), not for permission; "
            f"send the answer as text or {{'answer': ...}}"
        )
    return decision


def _names_ticket(item: dict[str, Any]) -> bool:
    return "ticketId" in item or "ticket_id" in item


def read_answer(message: pb.Message, pending: list[ResumeTicket]) -> tuple[ResumeTicket, Decision]:
    """The ticket ``message`` answers (its ``ticket_id``, else the first pending) and the
    decision; raises :class:`AnswerError` for an answer that does not fit."""
    if not pending:
        raise AnswerError("the task has no pending question")
    items = [d for d in data_parts(message) if isinstance(d, dict)]
    wanted = next((d.get("ticketId", d.get("ticket_id")) for d in items if _names_ticket(d)), None)
    ticket = _pick(pending, wanted)
    for item in items:
        decision = _from_data(item, ticket)
        if decision is not None:
            return ticket, _check_kind(ticket, decision)
    text = message_text(message).strip()
    if not text:
        raise AnswerError(
            f"ticket {ticket.ticket_id!r}: the message has no answer; send text or a data "
            f"part with 'decision', 'approved' or 'answer'"
        )
    if _innermost_reason(ticket) == "tool_permission":
        word = text.lower().rstrip(".!")
        if word in _YES:
            return ticket, Approve(by="a2a")
        if word in _NO:
            return ticket, Deny(reason="denied by the A2A client", by="a2a")
        raise AnswerError(
            f"ticket {ticket.ticket_id!r} asks for permission to run {ticket.call.name!r}; "
            f"answer yes or no (got {text[:40]!r})"
        )
    return ticket, Respond(value=text)
