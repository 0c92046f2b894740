"""AI SDK v6 UI message stream: a transcoder over AgentEvents, and its chat endpoint.

``POST /v1/agents/{agent_id}/chat`` takes what ``DefaultChatTransport`` sends
(``{id, messages, trigger, messageId}``); the chat id names the thread (per
profile). A suspended call becomes ``tool-approval-request`` (approval id = the
ticket id); the client's next POST carries the ``approval-responded`` part,
which becomes ``Approve``/``Deny`` on that ticket, continuing the same message.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sse_starlette import ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from awaken_runtime import (
    AgentEvent,
    Approve,
    Cancelled,
    Decision,
    Deny,
    Error,
    MaxSteps,
    Message,
    NaturalEnd,
    Phase,
    RunFinish,
    StepEnd,
    StepStart,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)

from ._http import caller, read_json, sse
from ._hub import LiveRun
from ._problems import Problem, validation_problem
from ._service import Service, external_thread_id, new_id

__all__ = ["UIMessageStreamTranscoder", "aisdk_routes"]

HEADER = {"x-vercel-ai-ui-message-stream": "v1"}


class UIMessageStreamTranscoder:
    """Turns one run's AgentEvents into UI message stream chunks (stateful, one per stream)."""

    def __init__(self, message_id: str, denied: set[str] | None = None) -> None:
        self.message_id = message_id
        self.denied = denied or set()
        """Tool call ids the client denied: their results become ``tool-output-denied``."""
        self._open: dict[str, str] = {}  # channel -> open part id
        self._in_step = False
        self._root: str | None = None
        self._finish: RunFinish | None = None
        self._n = 0
        self._calls: set[str] = set()

    def start(self) -> list[dict[str, Any]]:
        """The chunks opening the stream."""
        return [{"type": "start", "messageId": self.message_id}]

    def _close_parts(self) -> list[dict[str, Any]]:
        out = [{"type": f"{ch}-end", "id": pid} for ch, pid in self._open.items()]
        self._open.clear()
        return out

    def _end_step(self) -> list[dict[str, Any]]:
        out = self._close_parts()
        if self._in_step:
            out.append({"type": "finish-step"})
            self._in_step = False
        return out

    def feed(self, event: AgentEvent) -> list[dict[str, Any]]:
        """The chunks for one event."""
        if self._root is None:
            self._root = event.run_id
        if event.run_id != self._root:
            return []  # sub-agent events: their outcome arrives as the delegating call's result
        if isinstance(event, StepStart):
            out = self._end_step()
            self._in_step = True
            return [*out, {"type": "start-step"}]
        if isinstance(event, TextDelta):
            out = []
            other = "reasoning" if event.channel == "text" else "text"
            if other in self._open:
                out.append({"type": f"{other}-end", "id": self._open.pop(other)})
            if event.channel not in self._open:
                self._n += 1
                self._open[event.channel] = pid = f"{self.message_id}-{self._n}"
                out.append({"type": f"{event.channel}-start", "id": pid})
            out.append(
                {
                    "type": f"{event.channel}-delta",
                    "id": self._open[event.channel],
                    "delta": event.delta,
                }
            )
            return out
        if isinstance(event, ToolCallReady):
            return [
                *self._close_parts(),
                *self._tool_input(event.call_id, event.name, event.arguments),
            ]
        if isinstance(event, ToolCallDone):
            return self._tool_done(event)
        if isinstance(event, StepEnd):
            return self._end_step()
        if isinstance(event, RunFinish):
            self._finish = event
            return self._end_step()
        return []

    def _tool_input(self, call_id: str, name: str, arguments: Any) -> list[dict[str, Any]]:
        self._calls.add(call_id)
        base = {"toolCallId": call_id, "toolName": name, "dynamic": True}
        return [
            {"type": "tool-input-start", **base},
            {"type": "tool-input-available", **base, "input": arguments},
        ]

    def _tool_done(self, event: ToolCallDone) -> list[dict[str, Any]]:
        out = self._close_parts()
        if event.outcome == "suspended":
            return out  # the approval request goes out when the run parks
        if event.call_id in self.denied:
            return [*out, {"type": "tool-output-denied", "toolCallId": event.call_id}]
        if event.outcome in ("success", "short_circuit"):
            output: Any = event.output
            with contextlib.suppress(ValueError):  # JSON results reach the UI as objects
                output = json.loads(event.output)
            return [
                *out,
                {
                    "type": "tool-output-available",
                    "toolCallId": event.call_id,
                    "output": output,
                    "dynamic": True,
                },
            ]
        return [
            *out,
            {
                "type": "tool-output-error",
                "toolCallId": event.call_id,
                "errorText": event.output,
                "dynamic": True,
            },
        ]

    def close(self, error: BaseException | None = None) -> list[dict[str, Any]]:
        """The chunks ending the stream (approval requests, ``error``, ``finish``)."""
        out = self._end_step()
        finish = self._finish
        if finish is None:
            text = (
                f"the run failed: {error}"
                if error is not None
                else "the run ended without finishing"
            )
            return [
                *out,
                {"type": "error", "errorText": text},
                {"type": "finish", "finishReason": "error"},
            ]
        if finish.phase is Phase.WAITING:
            for ticket in finish.tickets:
                if ticket.call.id not in self._calls:
                    # Parked in an earlier stream: announce it so the client has the part.
                    out.extend(
                        self._tool_input(ticket.call.id, ticket.call.name, ticket.call.arguments)
                    )
                out.append(
                    {
                        "type": "tool-approval-request",
                        "approvalId": ticket.ticket_id,
                        "toolCallId": ticket.call.id,
                    }
                )
            return [*out, {"type": "finish", "finishReason": "tool-calls"}]
        cause = finish.end_cause
        if isinstance(cause, Error):
            out.append({"type": "error", "errorText": str(cause.failure)})
            return [*out, {"type": "finish", "finishReason": "error"}]
        if isinstance(cause, Cancelled):
            return [*out, {"type": "abort"}]
        reason = "length" if isinstance(cause, MaxSteps) else "other"
        if isinstance(cause, NaturalEnd):
            reason = "stop"
        return [*out, {"type": "finish", "finishReason": reason}]


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
            decision: Decision = Approve(by="ai-sdk")
        else:
            decision = Deny(reason=str(approval.get("reason") or "denied by the user"), by="ai-sdk")
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
    agent_id = request.path_params["agent_id"]
    service: Service = request.app.state.service
    principal = caller(request)
    service.agent(agent_id)
    try:
        body = _ChatBody.model_validate(await read_json(request))
    except ValidationError as exc:
        raise validation_problem(exc) from None
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
