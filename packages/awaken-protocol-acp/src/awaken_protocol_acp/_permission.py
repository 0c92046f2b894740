"""A parked tool call as ``session/request_permission``, and the client's answer as a decision.

The runtime parks a call that needs a human (``AwaitReason.TOOL_PERMISSION``:
the permissions plugin's ``ask``, or a tool that suspends for approval) and
hands back a ticket; this module words that ticket for the client and turns
the option the user picked into ``Approve`` or ``Deny``.
"""

from __future__ import annotations

from typing import Any

from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from awaken_runtime import Approve, AwaitReason, Decision, Deny, ResumeTicket

from ._updates import tool_call_title

__all__ = [
    "ALLOW_ALWAYS",
    "ALLOW_ONCE",
    "OPTIONS",
    "REJECT_ALWAYS",
    "REJECT_ONCE",
    "decision_for",
    "innermost",
    "is_permission_ask",
    "permission_call",
]

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"
REJECT_ALWAYS = "reject_always"

OPTIONS = [
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(
        option_id=ALLOW_ALWAYS, name="Always allow this call in this session", kind="allow_always"
    ),
    PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
    PermissionOption(
        option_id=REJECT_ALWAYS,
        name="Always reject this call in this session",
        kind="reject_always",
    ),
]
"""The choices offered for every ask; "always" is remembered (by the gate that asked, e.g. the
permissions plugin: the same tool with the same arguments) for the session's thread."""

_DECISIONS: dict[str, Decision] = {
    ALLOW_ONCE: Approve(by="acp"),
    ALLOW_ALWAYS: Approve(remember="thread", by="acp"),
    REJECT_ONCE: Deny(reason="rejected by the user", by="acp"),
    REJECT_ALWAYS: Deny(reason="rejected by the user", remember="thread", by="acp"),
}

# Delegation tickets nest the sub-agent's ticket; a human answers the innermost one.
_MAX_NESTING = 32


def innermost(ticket: ResumeTicket) -> dict[str, Any]:
    """The ticket (as JSON) a human answers: a sub-agent's ask behind delegation tickets."""
    data: dict[str, Any] = ticket.model_dump(mode="json")
    for _ in range(_MAX_NESTING):
        child = data.get("payload", {}).get("child_ticket")
        if data.get("await_reason") != AwaitReason.DELEGATION.value or not isinstance(child, dict):
            break
        data = child
    return data


def is_permission_ask(ticket: ResumeTicket) -> bool:
    """Whether ``ticket`` (or the sub-agent ticket behind it) asks for tool permission."""
    return innermost(ticket).get("await_reason") == AwaitReason.TOOL_PERMISSION.value


def permission_call(ticket: ResumeTicket) -> ToolCallUpdate:
    """The ``toolCall`` of the permission request: the parent's call id, the asked tool."""
    inner = innermost(ticket)
    call = inner.get("call", {})
    arguments = call.get("arguments", {})
    reason = inner.get("payload", {}).get("reason")
    return ToolCallUpdate(
        tool_call_id=ticket.call.id,
        title=tool_call_title(str(call.get("name", ticket.call.name)), arguments),
        kind="other",
        status="pending",
        raw_input={"arguments": arguments, "reason": reason} if reason else arguments,
    )


def decision_for(response: RequestPermissionResponse) -> Decision | None:
    """The decision for the option the user picked; ``None`` when the ask was cancelled.

    An option id this agent never offered is a rejection: running a tool on an
    answer nobody understood would be the unsafe reading.
    """
    outcome = response.outcome
    if outcome.outcome == "cancelled":
        return None
    return _DECISIONS.get(
        outcome.option_id, Deny(reason=f"unknown permission option {outcome.option_id!r}")
    )
