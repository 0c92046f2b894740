"""The AG-UI endpoint: ``POST /v1/agents/{agent_id}/ag-ui`` with a ``RunAgentInput``.

The client's ``threadId`` names the thread (per profile). The ``resume``
entries of a run answer the previous run's interrupts: ``resolved`` approves
(unless its payload says ``approved: false``), ``cancelled`` denies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ag_ui import core as ag
from ag_ui.encoder import EventEncoder
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from awaken_runtime import Approve, Decision, Deny

from ._agui import AGUITranscoder
from ._agui_history import as_ui_messages, user_text
from ._aisdk_turns import new_turn
from ._http import caller, read_body
from ._hub import LiveRun
from ._problems import Problem
from ._service import Service, external_thread_id

__all__ = ["agui_routes"]


def _decision(entry: ag.ResumeEntry) -> Decision:
    if entry.status == "resolved":
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        if payload.get("approved") is False:
            return Deny(reason=str(payload.get("reason") or "denied by the user"))
        return Approve()
    return Deny(reason="cancelled by the user")


async def _stream(
    service: Service, run: LiveRun, coder: AGUITranscoder, accept: str
) -> AsyncIterator[str]:
    encoder = EventEncoder(accept=accept)
    complete = False
    try:
        for event in coder.start():
            yield encoder.encode(event)
        async for item in run.follow(0):
            for event in coder.feed(item):
                yield encoder.encode(event)
        for event in coder.close(run.error):
            yield encoder.encode(event)
        complete = True
    finally:
        if not complete:  # abortRun() or a dropped connection: --on-disconnect decides
            service.dropped(run)


async def run_agent(request: Request) -> Response:
    """POST /v1/agents/{agent_id}/ag-ui: a RunAgentInput, as AG-UI events."""
    agent_id = request.path_params["agent_id"]
    service: Service = request.app.state.service
    principal = caller(request)
    service.agent(agent_id)
    body = await read_body(request, ag.RunAgentInput)
    chat_key = external_thread_id(principal.profile_id, body.thread_id)
    await service.ensure_thread(chat_key, principal, agent_id)
    thread_id = await service.chat_thread(chat_key)
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
        text = user_text(last) if isinstance(last, ag.UserMessage) else None
        if not text:
            raise Problem(
                422,
                "invalid-request",
                "RunAgentInput needs a last user message with text content (or resume entries)",
                field="/messages",
                fix="append a user message, or send resume entries for the interrupts",
            )
        prior = as_ui_messages(body.messages[:-1])
        run = await new_turn(service, principal, agent_id, chat_key, text, prior)
    coder = AGUITranscoder(
        body.thread_id, body.run_id, service.thread_state(snap), server_run_id=run.run_id
    )
    accept = request.headers.get("accept", "")
    return StreamingResponse(
        _stream(service, run, coder, accept),
        media_type=EventEncoder(accept=accept).get_content_type(),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def agui_routes() -> list[BaseRoute]:
    """The AG-UI endpoint."""
    return [Route("/v1/agents/{agent_id}/ag-ui", run_agent, methods=["POST"])]
