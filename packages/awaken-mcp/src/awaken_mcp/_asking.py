"""A parked ticket as an MCP elicitation form, and the client's answer as a decision.

- ``TOOL_PERMISSION`` (an ``ask`` rule): a form showing the call (tool and
  arguments) and why it asks, with ``decision`` = ``approve`` | ``deny``, an
  optional ``reason``, and ``remember`` when the gate offers wider scopes.
  ``accept`` + approve is ``Approve``; anything else is ``Deny`` with what the
  user said (or that they declined / dismissed it).
- ``USER_INPUT`` (a tool asking its user): the question's own schema when the
  payload carries one (``requested_schema``, ``schema`` or ``response_schema``;
  an MCP server's forms relayed by awaken's MCP client under ``requests``),
  else one free-text ``answer``. ``accept`` is ``Respond`` with the content
  (the ``answer`` alone for the free-text form; keyed by request id when an
  MCP server asked several things at once); decline / cancel is ``Deny``.

Other reasons (a scheduled call) have no form: the caller reports them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard

import mcp_types as types

from awaken_runtime import Approve, AwaitReason, Decision, Deny, Respond, ResumeTicket

__all__ = ["Form", "decide", "forms"]

_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_ANSWER = "answer"
_DID = {"decline": "declined", "cancel": "dismissed"}
_MAX_SHOWN = 2000
"""Characters of a call's arguments shown in a form (the rest is elided)."""


@dataclass(frozen=True)
class Form:
    """One form of a ticket: its key (``None`` for a single form), message and schema."""

    key: str | None
    message: str
    schema: dict[str, Any]

    def request(self) -> types.ElicitRequestFormParams:
        """The ``elicitation/create`` params of this form."""
        return types.ElicitRequestFormParams(message=self.message, requested_schema=self.schema)


def _shown(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "…"


def _approval(ticket: ResumeTicket, agent: str) -> Form:
    payload = ticket.payload
    call = ticket.call
    why = str(payload.get("reason") or "its policy asks before this call")
    message = (
        f"Agent {agent!r} wants to call the tool {call.name!r} with arguments "
        f"{_shown(call.arguments)}. It asks because {why}. Approve or deny this call."
    )
    properties: dict[str, Any] = {
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "deny"],
            "description": "approve: run the call; deny: refuse it",
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Why (the agent reads it when the call is denied)",
        },
    }
    scopes = [s for s in payload.get("remember", []) if s in ("once", "thread", "profile")]
    if len(scopes) > 1:
        properties["remember"] = {
            "type": "string",
            "title": "Remember",
            "enum": scopes,
            "default": "once",
            "description": "once: this call only; thread / profile: the same call there",
        }
    schema = {"type": "object", "properties": properties, "required": ["decision"]}
    return Form(None, message, schema)


def _flat(schema: Any) -> TypeGuard[dict[str, Any]]:
    """Whether ``schema`` is a form MCP can carry: an object of primitive properties."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return False
    for prop in props.values():
        kind = prop.get("type") if isinstance(prop, dict) else None
        items = prop.get("items") if isinstance(prop, dict) else None
        if kind not in _PRIMITIVES and not (kind == "array" and isinstance(items, dict)):
            return False
    return True


def _question(ticket: ResumeTicket, agent: str) -> list[Form]:
    payload = ticket.payload
    relayed = payload.get("requests")
    if isinstance(relayed, dict) and relayed:
        forms: list[Form] = []
        keyed = len(relayed) > 1
        for key, asked in relayed.items():
            asked = asked if isinstance(asked, dict) else {}
            schema = asked.get("requested_schema")
            if asked.get("mode", "form") != "form" or not _flat(schema):
                return []
            message = str(asked.get("message") or f"{agent!r} needs an answer")
            forms.append(Form(str(key) if keyed else None, message, schema))
        return forms
    message = str(
        payload.get("message")
        or payload.get("question")
        or payload.get("prompt")
        or f"Agent {agent!r} asks for input (tool {ticket.call.name!r})."
    )
    for field in ("requested_schema", "schema", "response_schema"):
        schema = payload.get(field)
        if _flat(schema):
            return [Form(None, message, schema)]
    answer = {"type": "string", "title": "Answer", "description": "Your answer"}
    return [Form(None, message, {"type": "object", "properties": {_ANSWER: answer}})]


def forms(ticket: ResumeTicket, agent: str) -> list[Form]:
    """The forms that answer ``ticket`` (empty when it cannot be asked over MCP)."""
    if ticket.await_reason is AwaitReason.TOOL_PERMISSION:
        return [_approval(ticket, agent)]
    if ticket.await_reason is AwaitReason.USER_INPUT:
        return _question(ticket, agent)
    return []


def decide(
    ticket: ResumeTicket, answers: list[tuple[Form, types.ElicitResult]], by: str
) -> Decision:
    """The decision the client's ``answers`` (one per form of ``ticket``) make."""
    refused = next((r for _, r in answers if r.action != "accept"), None)
    if ticket.await_reason is AwaitReason.TOOL_PERMISSION:
        content = (answers[0][1].content or {}) if refused is None else {}
        remember = content.get("remember") if content.get("remember") else "once"
        if remember not in ("once", "thread", "profile"):
            remember = "once"
        if refused is None and content.get("decision") == "approve":
            return Approve(remember=remember, by=by)
        reason = str(content.get("reason") or "").strip()
        if refused is not None:
            reason = f"the MCP client's user {_DID[refused.action]} the request"
        return Deny(reason=reason or "denied by the MCP client's user", remember=remember, by=by)
    if refused is not None:
        return Deny(reason=f"the MCP client's user {_DID[refused.action]} the question", by=by)
    values = {form.key: result.content or {} for form, result in answers}
    if len(values) == 1 and None in values:
        content = values[None]
        only = list(content)
        single = answers[0][0].schema.get("properties", {})
        if only == [_ANSWER] and list(single) == [_ANSWER]:
            return Respond(value=content[_ANSWER])
        return Respond(value=content)
    return Respond(value={str(k): v for k, v in values.items()})
