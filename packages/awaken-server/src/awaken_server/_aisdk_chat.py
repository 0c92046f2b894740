"""The AI SDK v6 chat endpoint: ``POST /v1/agents/{agent_id}/chat``.

It takes what ``DefaultChatTransport`` sends (``{id, messages, trigger,
messageId}``); the chat id names the thread (per profile). The client's POST
after a ``tool-approval-request`` carries the ``approval-responded`` part, which
becomes ``Approve``/``Deny`` on that ticket; the stream continues the same
assistant message. ``GET .../chat/{chatId}/stream`` replays a chat's stream
that was cut before its end (under ``--on-disconnect continue``; 204 otherwise).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from awaken_runtime import AgentEvent, Approve, Decision, Deny

from ._aisdk import UIMessageStreamTranscoder
from ._aisdk_turns import regenerate, user_turn
from ._chat_streams import ChatStream
from ._http import caller, read_body, sse
from ._hub import LiveRun
from ._ids import new_id
from ._owners import not_found
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


async def _chunks(
    events: AsyncIterator[AgentEvent],
    error: Callable[[], BaseException | None],
    coder: UIMessageStreamTranscoder,
) -> AsyncIterator[ServerSentEvent]:
    for chunk in coder.start():
        yield ServerSentEvent(data=json.dumps(chunk))
    async for event in events:
        for chunk in coder.feed(event):
            yield ServerSentEvent(data=json.dumps(chunk))
    for chunk in coder.close(error()):
        yield ServerSentEvent(data=json.dumps(chunk))
    yield ServerSentEvent(data="[DONE]")


async def _live_chunks(
    service: Service, chat_key: str, run: LiveRun, coder: UIMessageStreamTranscoder
) -> AsyncIterator[ServerSentEvent]:
    """The stream of a POST; what a cut before its end means is ``--on-disconnect``'s."""
    after = run.events[0].seq - 1 if run.events else 0
    record = ChatStream(run.run_id, coder.message_id, after, frozenset(coder.denied))
    service.chat_streams.open(chat_key, record)
    complete = False
    try:
        async for sent in _chunks(run.follow(0), lambda: run.error, coder):
            yield sent
        complete = True
    finally:
        if complete:
            service.chat_streams.completed(chat_key, record)
        else:
            service.dropped(run)


async def _replayed_chunks(
    service: Service, chat_key: str, record: ChatStream
) -> AsyncIterator[ServerSentEvent]:
    """A cut stream again from its first chunk, live to the run's end."""

    def error() -> BaseException | None:
        live = service.hub.live(record.run_id)
        return live.error if live is not None else None

    coder = UIMessageStreamTranscoder(record.message_id, set(record.denied), run_id=record.run_id)
    events = service.hub.events(service.runtime, record.run_id, record.after)
    async for sent in _chunks(events, error, coder):
        yield sent
    service.chat_streams.completed(chat_key, record)


async def chat(request: Request) -> Response:
    """POST /v1/agents/{agent_id}/chat: a user message or approvals, as a UI message stream."""
    agent_id = request.path_params["agent_id"]
    service: Service = request.app.state.service
    principal = caller(request)
    service.agent(agent_id)
    body = await read_body(request, _ChatBody)
    if body.trigger not in ("submit-message", "regenerate-message"):
        raise Problem(
            422,
            "unsupported-trigger",
            f"trigger {body.trigger!r} is not supported",
            field="/trigger",
            fix="send trigger 'submit-message' or 'regenerate-message'",
        )
    chat_key = external_thread_id(principal.profile_id, body.id)
    if body.trigger == "regenerate-message":
        run = await regenerate(service, principal, agent_id, chat_key, body.id, body.messages)
        coder = UIMessageStreamTranscoder(new_id("msg_"), run_id=run.run_id)
        return sse(_live_chunks(service, chat_key, run, coder), headers=HEADER)
    await service.ensure_thread(chat_key, principal, agent_id)
    thread_id = await service.chat_thread(chat_key)
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
        coder = UIMessageStreamTranscoder(
            str(last.get("id") or new_id("msg_")), denied, run_id=run.run_id
        )
    elif last.get("role") == "user":
        run = await user_turn(service, principal, agent_id, chat_key, body.messages)
        coder = UIMessageStreamTranscoder(new_id("msg_"), run_id=run.run_id)
    else:
        raise Problem(
            422,
            "invalid-request",
            "the last message must be a user message or approval responses",
            field="/messages/-1/role",
            fix="send role 'user'",
        )
    return sse(_live_chunks(service, chat_key, run, coder), headers=HEADER)


async def resume_stream(request: Request) -> Response:
    """GET /v1/agents/{agent_id}/chat/{chat_id}/stream: the chat's cut stream, replayed.

    204 when there is nothing to resume (the AI SDK's "no active stream"), and
    always under ``--on-disconnect cancel``; 404 for a chat this profile never had.
    """
    agent_id = request.path_params["agent_id"]
    chat_id = request.path_params["chat_id"]
    service: Service = request.app.state.service
    principal = caller(request)
    service.agent(agent_id)
    chat_key = external_thread_id(principal.profile_id, chat_id)
    if not await service.owns_thread(chat_key, principal):
        problem = not_found("chat", chat_id)
        problem.fix = "resume a chat this key started (POST /v1/agents/{agent_id}/chat)"
        raise problem
    record = service.chat_streams.resumable(chat_key)
    if service.on_disconnect == "cancel" or record is None:
        return Response(status_code=204)
    return sse(_replayed_chunks(service, chat_key, record), headers=HEADER)


def aisdk_routes() -> list[BaseRoute]:
    """The AI SDK endpoints."""
    return [
        Route("/v1/agents/{agent_id}/chat", chat, methods=["POST"]),
        Route("/v1/agents/{agent_id}/chat/{chat_id}/stream", resume_stream, methods=["GET"]),
    ]
