"""AG-UI 1.0: a transcoder over AgentEvents, and its ``RunAgentInput`` endpoint.

``POST /v1/agents/{agent_id}/ag-ui``. The client's ``threadId`` names the
thread (per profile); ``RUN_STARTED`` and the one terminal event echo its
``threadId``/``runId``. A suspended run ends with ``RUN_FINISHED`` outcome
``interrupt`` carrying one interrupt per ticket (interrupt id = ticket id); the
next run's ``resume`` entries answer them (``resolved`` approves, ``cancelled``
denies).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ag_ui import core as ag
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from awaken_runtime import (
    AgentEvent,
    Approve,
    Cancelled,
    Decision,
    Deny,
    Error,
    MergePolicy,
    Message,
    Phase,
    RunFinish,
    Scope,
    StepEnd,
    StepStart,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)

from ._http import caller, read_json
from ._hub import LiveRun
from ._problems import Problem, validation_problem
from ._service import Service, external_thread_id, new_id

__all__ = ["AGUITranscoder", "agui_routes"]


class AGUITranscoder:
    """Turns one run's AgentEvents into AG-UI events (stateful, one per stream)."""

    def __init__(self, thread_id: str, run_id: str, state: dict[str, Any]) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.state = dict(state)
        self._text: str | None = None
        self._last_text: str | None = None  # a tool call after text joins that message
        self._reasoning: str | None = None
        self._step: str | None = None
        self._root: str | None = None
        self._finish: RunFinish | None = None

    def start(self) -> list[ag.BaseEvent]:
        """``RUN_STARTED`` (with the protocol version) and the thread's state."""
        return [
            ag.RunStartedEvent(
                thread_id=self.thread_id, run_id=self.run_id, protocol_version=ag.PROTOCOL_VERSION
            ),
            ag.StateSnapshotEvent(snapshot=self.state),
        ]

    def _close_text(self) -> list[ag.BaseEvent]:
        out: list[ag.BaseEvent] = []
        if self._text is not None:
            out.append(ag.TextMessageEndEvent(message_id=self._text))
            self._last_text, self._text = self._text, None
        if self._reasoning is not None:
            out.append(ag.ReasoningMessageEndEvent(message_id=self._reasoning))
            out.append(ag.ReasoningEndEvent(message_id=self._reasoning))
            self._reasoning = None
        return out

    def _end_step(self) -> list[ag.BaseEvent]:
        out = self._close_text()
        if self._step is not None:
            out.append(ag.StepFinishedEvent(step_name=self._step))
            self._step = None
        return out

    def feed(self, event: AgentEvent) -> list[ag.BaseEvent]:
        """The AG-UI events for one AgentEvent."""
        if self._root is None:
            self._root = event.run_id
        if event.run_id != self._root:
            return []
        if isinstance(event, StepStart):
            out = self._end_step()
            self._last_text = None
            self._step = f"step {event.step}"
            return [*out, ag.StepStartedEvent(step_name=self._step)]
        if isinstance(event, TextDelta):
            return self._delta(event)
        if isinstance(event, ToolCallReady):
            return [
                *self._close_text(),
                ag.ToolCallStartEvent(
                    tool_call_id=event.call_id,
                    tool_call_name=event.name,
                    parent_message_id=self._text or self._last_text,
                ),
                ag.ToolCallArgsEvent(tool_call_id=event.call_id, delta=json.dumps(event.arguments)),
                ag.ToolCallEndEvent(tool_call_id=event.call_id),
            ]
        if isinstance(event, ToolCallDone):
            if event.outcome == "suspended":
                return []
            return [
                *self._close_text(),
                ag.ToolCallResultEvent(
                    message_id=new_id("msg_"),
                    tool_call_id=event.call_id,
                    content=event.output,
                    role="tool",
                ),
            ]
        if isinstance(event, StepEnd):
            return [*self._end_step(), *self._state_delta(event)]
        if isinstance(event, RunFinish):
            self._finish = event
            return self._end_step()
        return []

    def _delta(self, event: TextDelta) -> list[ag.BaseEvent]:
        out: list[ag.BaseEvent] = []
        if event.channel == "text":
            if self._reasoning is not None:
                out.extend(self._close_text())
            if self._text is None:
                self._text = new_id("msg_")
                out.append(ag.TextMessageStartEvent(message_id=self._text, role="assistant"))
            out.append(ag.TextMessageContentEvent(message_id=self._text, delta=event.delta))
            return out
        if self._text is not None:
            out.extend(self._close_text())
        if self._reasoning is None:
            self._reasoning = new_id("rsn_")
            out.append(ag.ReasoningStartEvent(message_id=self._reasoning))
            out.append(ag.ReasoningMessageStartEvent(message_id=self._reasoning, role="reasoning"))
        out.append(ag.ReasoningMessageContentEvent(message_id=self._reasoning, delta=event.delta))
        return out

    def _state_delta(self, event: StepEnd) -> list[ag.BaseEvent]:
        ops: list[dict[str, Any]] = []
        for command in event.state_delta:
            if command.scope is not Scope.THREAD:
                continue
            key = str(command.key)
            path = "/" + _pointer(key)
            if command.action.kind == "remove":
                if key in self.state:
                    ops.append({"op": "remove", "path": path})
                    self.state.pop(key)
                continue
            value = command.action.value
            current = self.state.get(key)
            if (
                command.merge is MergePolicy.COMMUTATIVE
                and isinstance(value, dict)
                and isinstance(current, dict)
            ):
                # The store shallow-merges these: patch the members, keep the others.
                for member, item in value.items():
                    ops.append(
                        {"op": "add", "path": f"{path}/{_pointer(str(member))}", "value": item}
                    )
                self.state[key] = {**current, **value}
                continue
            ops.append(
                {"op": "replace" if key in self.state else "add", "path": path, "value": value}
            )
            self.state[key] = value
        return [ag.StateDeltaEvent.model_validate({"delta": ops})] if ops else []

    def close(self, error: BaseException | None = None) -> list[ag.BaseEvent]:
        """Exactly one terminal event."""
        out = self._end_step()
        finish = self._finish
        ids = {"thread_id": self.thread_id, "run_id": self.run_id}
        if finish is None:
            text = f"the run failed: {error}" if error is not None else "the run did not finish"
            return [*out, ag.RunErrorEvent(message=text)]
        if finish.phase is Phase.WAITING:
            interrupts = [
                ag.Interrupt(
                    id=t.ticket_id,
                    reason=t.await_reason.value,
                    tool_call_id=t.call.id,
                    message=f"approve the call {t.call.name}({json.dumps(t.call.arguments)})?",
                    expires_at=t.deadline.isoformat() if t.deadline else None,
                )
                for t in finish.tickets
            ]
            outcome: Any = ag.RunFinishedInterruptOutcome(type="interrupt", interrupts=interrupts)
            return [*out, ag.RunFinishedEvent(**ids, outcome=outcome)]
        if isinstance(finish.end_cause, Error):
            return [*out, ag.RunErrorEvent(message=str(finish.end_cause.failure))]
        if isinstance(finish.end_cause, Cancelled):
            cancelled = ag.RunFinishedCancelledOutcome(type="cancelled")
            return [*out, ag.RunFinishedEvent(**ids, outcome=cancelled)]
        success = ag.RunFinishedSuccessOutcome(type="success")
        return [*out, ag.RunFinishedEvent(**ids, result=finish.final_text, outcome=success)]


def _pointer(token: str) -> str:
    """One JSON Pointer reference token (RFC 6901 escaping)."""
    return token.replace("~", "~0").replace("/", "~1")


def _decision(entry: ag.ResumeEntry) -> Decision:
    if entry.status == "resolved":
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        if payload.get("approved") is False:
            return Deny(reason=str(payload.get("reason") or "denied by the user"), by="ag-ui")
        return Approve(by="ag-ui")
    return Deny(reason="cancelled by the user", by="ag-ui")


async def _stream(run: LiveRun, coder: AGUITranscoder, accept: str) -> AsyncIterator[str]:
    encoder = EventEncoder(accept=accept)
    for event in coder.start():
        yield encoder.encode(event)
    async for item in run.follow(0):
        for event in coder.feed(item):
            yield encoder.encode(event)
    for event in coder.close(run.error):
        yield encoder.encode(event)


async def run_agent(request: Request) -> Response:
    agent_id = request.path_params["agent_id"]
    service: Service = request.app.state.service
    principal = caller(request)
    service.agent(agent_id)
    try:
        body = ag.RunAgentInput.model_validate(await read_json(request))
    except ValidationError as exc:
        raise validation_problem(exc) from None
    thread_id = external_thread_id(principal.profile_id, body.thread_id)
    await service.ensure_thread(thread_id, principal, agent_id)
    snap = await service.snapshot(thread_id, principal.profile_id)
    if body.resume:
        pending = {t.ticket_id: t for t in (snap.parked.tickets if snap.parked else [])}
        answers = []
        for n, entry in enumerate(body.resume):
            if entry.interrupt_id not in pending:
                raise Problem(
                    409,
                    "ticket-not-pending",
                    f"interrupt {entry.interrupt_id!r} is not pending on this thread",
                    field=f"/resume/{n}/interruptId",
                    fix="answer the interrupts of the thread's last RUN_FINISHED",
                )
            answers.append((entry.interrupt_id, _decision(entry)))
        run_id = pending[answers[0][0]].run_id
        run = await service.resume(principal, run_id, answers)
    else:
        last = body.messages[-1] if body.messages else None
        if last is None or last.role != "user" or not isinstance(last.content, str):
            raise Problem(
                422,
                "invalid-request",
                "RunAgentInput needs a last user message with text content (or resume entries)",
                field="/messages",
                fix="append a user message, or send resume entries for the interrupts",
            )
        run = await service.start_run(
            principal, agent_id=agent_id, thread_id=thread_id, messages=[Message.user(last.content)]
        )
    coder = AGUITranscoder(body.thread_id, body.run_id, service.thread_state(snap))
    accept = request.headers.get("accept", "")
    return StreamingResponse(
        _stream(run, coder, accept),
        media_type=EventEncoder(accept=accept).get_content_type(),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def agui_routes() -> list[BaseRoute]:
    """The AG-UI endpoint."""
    return [Route("/v1/agents/{agent_id}/ag-ui", run_agent, methods=["POST"])]
