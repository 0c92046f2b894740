"""The AI SDK v6 chat endpoint: ``POST /v1/agents/{agent_id}/chat``.

It takes what ``DefaultChatTransport`` sends (``{id, messages, trigger,
messageId}``); the chat id names the thread (per profile). The client's POST
after a ``tool-approval-request`` carries the ``approval-responded`` part, which
becomes ``Approve``/``Deny`` on that ticket; the stream continues the same
assistant message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from awaken_runtime import Approve, Decision, Deny, Message

from ._aisdk import UIMessageStreamTranscoder
from ._http import caller, read_body, sse
from ._hub import LiveRun
from ._ids import new_id
from ._problems import Problem
from ._service import Service, external_thread_id

__all__ = ["aisdk_routes"]

HEADER = {"x-vercel-ai-ui-message-stream": "v1"}


class _ChatBody(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=200)
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)
    trigger: str = "submit-message"
    messageId: str | None = None


def _text_of(message: dict[str, Any]) -> str:
    parts = message.get("parts") or []
    return "".join(
        p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def _approvals(message: dict[str, Any]) -> list[tuple[str, str, Decision]]:
    """``(approval id, tool call id, decision)`` of each ``approval-responded`` part."""
    out: list[tuple[str, str, Decision]] = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict) or part.get("state") != "approval-responded":
            continue
        approval = part.get("approval") or {}
        if not isinstance(approval, dict) or not isinstance(approval.get("id"), str):
            raise Problem(
                422,
                "invalid-request",
                "an approval-responded part has no approval.id",
                field="/messages/-1/parts",
                fix="send the part the AI SDK built from addToolApprovalResponse",
            )
        if approval.get("approved") is True:
            decision: Decision = Approve()
        else:
            decision = Deny(reason=str(approval.get("reason") or "denied by the user"))
        out.append((approval["id"], str(part.get("toolCallId", "")), decision))
    return out


async def _chunks(run: LiveRun, coder: UIMessageStreamTranscoder) -> AsyncIterator[ServerSentEvent]:
    for chunk in coder.start():
        yield ServerSentEvent(data=json.dumps(chunk))
    async for event in run.follow(0):
        for chunk in coder.feed(event):
            yield ServerSentEvent(data=json.dumps(chunk))
    for chunk in coder.close(run.error):
        yield ServerSentEvent(data=json.dumps(chunk))
    yield ServerSentEvent(data="[DONE]")


async def chat(request: Request) -> Response:
    """POST /v1/agents/{agent_id}/chat: a user message or approvals, as a UI message stream."""
    agent_id = request.path_params["agent_id"]
    service: Service = request.app.state.service
    principal = caller(request)
    service.agent(agent_id)
    body = await read_body(request, _ChatBody)
    if body.trigger != "submit-message":
        raise Problem(
            422,
            "unsupported-trigger",
            f"trigger {body.trigger!r} is not supported",
            field="/trigger",
            fix="send trigger 'submit-message'",
        )
    thread_id = external_thread_id(principal.profile_id, body.id)
    await service.ensure_thread(thread_id, principal, agent_id)
    last = body.messages[-1]
    if last.get("role") == "assistant":
        answers = _approvals(last)
        if not answers:
            raise Problem(
                422,
                "invalid-request",
                "the last message is an assistant message without approval responses",
                field="/messages/-1",
                fix="end messages with a user message, or answer the tool approval requests",
            )
        pending = {t.ticket_id: t for t in await service.pending(thread_id, principal.profile_id)}
        first = pending.get(answers[0][0])
        if first is None:
            raise Problem(
                409,
                "ticket-not-pending",
                f"approval {answers[0][0]!r} is not pending in this chat",
                field="/messages/-1/parts",
                fix="start a new message; the approval was already answered",
            )
        denied = {call for _, call, d in answers if isinstance(d, Deny)}
        run = await service.resume(principal, first.run_id, [(a, d) for a, _, d in answers])
        coder = UIMessageStreamTranscoder(str(last.get("id") or new_id("msg_")), denied)
    elif last.get("role") == "user":
        text = _text_of(last)
        if not text:
            raise Problem(
                422,
                "invalid-request",
                "the last user message has no text part",
                field="/messages/-1/parts",
                fix="send a text part",
            )
        run = await service.start_run(
            principal, agent_id=agent_id, thread_id=thread_id, messages=[Message.user(text)]
        )
        coder = UIMessageStreamTranscoder(new_id("msg_"))
    else:
        raise Problem(
            422,
            "invalid-request",
            "the last message must be a user message or approval responses",
            field="/messages/-1/role",
            fix="send role 'user'",
        )
    return sse(_chunks(run, coder), headers=HEADER)


def aisdk_routes() -> list[BaseRoute]:
    """The AI SDK endpoint."""
    return [Route("/v1/agents/{agent_id}/chat", chat, methods=["POST"])]
