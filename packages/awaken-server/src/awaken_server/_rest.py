"""The neutral API under ``/v1``: agents, threads, runs, events, resume, cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from sse_starlette import ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from awaken_runtime import AgentEvent, AwakenError, Message, RunFinish
from awaken_runtime.stores import ConfigNotFound

from ._http import caller, last_event_id, read_body, sse
from ._hub import LiveRun
from ._ids import new_id
from ._problems import Problem
from ._schemas import DECISION_SHAPE, CreateThread, PublishConfig, ResumeBody, Rollback, StartRun
from ._service import Service

__all__ = ["rest_routes"]

Endpoint = Callable[[Request], Awaitable[Response]]


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def _event_sse(event: AgentEvent, root: str) -> ServerSentEvent:
    # Ids are the root run's seq; sub-agent events carry none (the last id stands).
    return ServerSentEvent(
        data=event.model_dump_json(),
        event=event.type,
        id=str(event.seq) if event.run_id == root else None,
    )


async def _event_stream(
    events: AsyncIterator[AgentEvent], root: str
) -> AsyncIterator[ServerSentEvent]:
    async for event in events:
        yield _event_sse(event, root)


def _finish_json(run: LiveRun) -> dict[str, Any]:
    finish = next(
        (e for e in reversed(run.events) if isinstance(e, RunFinish) and e.run_id == run.run_id),
        None,
    )
    if finish is None:
        detail = repr(run.error) if run.error is not None else "the run produced no RunFinish"
        raise Problem(500, "run-failed", detail)
    return {"run_id": run.run_id, "thread_id": run.thread_id, **finish.model_dump(mode="json")}


async def _answer(run: LiveRun, stream: bool) -> Response:
    if stream:
        return sse(_event_stream(run.follow(0), run.run_id))
    async for _ in run.follow(0):
        pass
    return JSONResponse(_finish_json(run))


def _version_json(version: Any) -> dict[str, Any]:
    data: dict[str, Any] = version.model_dump(mode="json")
    return data


async def list_agents(request: Request) -> Response:
    """GET /v1/agents: the agents and the config version each runs with."""
    service = _service(request)
    agents = [
        {"id": agent_id, "config_version": service.catalog.version_of(agent_id)}
        for agent_id in service.catalog.agent_ids()
    ]
    return JSONResponse({"agents": agents})


def _may_publish(request: Request) -> None:
    if caller(request).profile_id not in request.app.state.publishers:
        raise Problem(
            403,
            "forbidden",
            "this key's profile may not publish agent configs (they change every profile's agents)",
            field="header:Authorization",
            fix="use a key of a profile the server lists in --publishers",
        )


async def publish_agent(request: Request) -> Response:
    """POST /v1/agents: publish a config version (publishers only)."""
    _may_publish(request)
    body = await read_body(request, PublishConfig)
    service = _service(request)
    try:
        version = await service.publish(body.config.model_dump(mode="json"), body.note)
    except AwakenError as exc:
        # Well-formed but naming models, tools or plugins this server lacks: a conflict
        # with the server's registries, not a malformed body.
        raise Problem(
            409,
            "config-does-not-resolve",
            str(exc),
            field="/config",
            fix="name models, tools and plugins this server has (GET /v1/agents, awaken plugins)",
        ) from None
    return JSONResponse(_version_json(version), status_code=201)


async def agent_versions(request: Request) -> Response:
    """GET /v1/agents/{agent_id}/versions: the agent's config history."""
    agent_id = request.path_params["agent_id"]
    service = _service(request)
    service.agent(agent_id)
    history = await service.store.config_history(agent_id)
    return JSONResponse({"versions": [_version_json(v) for v in history]})


async def rollback_agent(request: Request) -> Response:
    """POST /v1/agents/{agent_id}/rollback: republish an older version."""
    agent_id = request.path_params["agent_id"]
    _may_publish(request)
    body = await read_body(request, Rollback)
    service = _service(request)
    service.agent(agent_id)
    try:
        version = await service.rollback(agent_id, body.version)
    except ConfigNotFound as exc:
        raise Problem(
            404, "not-found", str(exc), field="/version", fix="GET .../versions lists them"
        ) from None
    except AwakenError as exc:
        raise Problem(
            409,
            "config-does-not-resolve",
            str(exc),
            field="/version",
            fix="roll back to a version whose models, tools and plugins this server has",
        ) from None
    return JSONResponse(_version_json(version), status_code=201)


async def create_thread(request: Request) -> Response:
    """POST /v1/threads: a new thread of the caller."""
    body = await read_body(request, CreateThread)
    service = _service(request)
    if body.agent_id is not None:
        service.agent(body.agent_id)
    thread_id = new_id("thread_")
    await service.owners.add_thread(thread_id, caller(request).profile_id, body.agent_id)
    return JSONResponse({"thread_id": thread_id, "agent_id": body.agent_id}, status_code=201)


async def list_threads(request: Request) -> Response:
    """GET /v1/threads: the caller's threads."""
    service = _service(request)
    await service.owners.refresh()
    threads = [
        {"thread_id": tid, "agent_id": rec["agent_id"], "created_at": rec["created_at"]}
        for tid, rec in service.owners.threads_of(caller(request).profile_id)
    ]
    return JSONResponse({"threads": threads})


async def read_thread(request: Request) -> Response:
    """GET /v1/threads/{thread_id}: messages, thread state, pending tickets, runs."""
    thread_id = request.path_params["thread_id"]
    service = _service(request)
    principal = caller(request)
    record = await service.check_thread(thread_id, principal)
    await service.owners.refresh()
    snap = await service.snapshot(thread_id, principal.profile_id)
    # A chat's thread (AI SDK chat id, AG-UI threadId) and its revisions (regenerate).
    chat_key = record.get("chat_key") or (thread_id if thread_id.startswith("ext_") else None)
    return JSONResponse(
        {
            "thread_id": thread_id,
            "agent_id": record["agent_id"],
            "chat": await service.owners.chat(chat_key) if chat_key else None,
            "version": snap.version,
            "messages": [m.model_dump(mode="json") for m in snap.messages],
            "state": service.thread_state(snap),
            "pending_tickets": [
                t.model_dump(mode="json") for t in (snap.parked.tickets if snap.parked else [])
            ],
            "runs": [rid for rid, _ in service.owners.runs_of_thread(thread_id)],
        }
    )


async def start_run(request: Request) -> Response:
    """POST /v1/threads/{thread_id}/runs: run an agent (JSON result or SSE)."""
    thread_id = request.path_params["thread_id"]
    service = _service(request)
    principal = caller(request)
    await service.check_thread(thread_id, principal)
    body = await read_body(request, StartRun)
    if isinstance(body.input, str):
        messages = [Message.user(body.input)]
    else:
        messages = [Message.user(m.content) for m in body.input]
    run = await service.start_run(
        principal, agent_id=body.agent_id, thread_id=thread_id, messages=messages
    )
    return await _answer(run, body.stream)


async def read_run(request: Request) -> Response:
    """GET /v1/runs/{run_id}: the run's record, config version and pending tickets."""
    run_id = request.path_params["run_id"]
    service = _service(request)
    principal = caller(request)
    record = await service.check_run(run_id, principal)
    stored = await service.store.get_run(run_id)
    tickets = [
        t.model_dump(mode="json")
        for t in await service.pending(record["thread_id"], principal.profile_id)
        if t.run_id == run_id
    ]
    live = service.hub.live(run_id)
    return JSONResponse(
        {
            "run_id": run_id,
            "thread_id": record["thread_id"],
            "agent_id": record["agent_id"],
            "config_version": record["config_version"],
            "live": live is not None and not live.done,
            "record": stored.model_dump(mode="json") if stored is not None else None,
            "pending_tickets": tickets,
        }
    )


async def run_events(request: Request) -> Response:
    """GET /v1/runs/{run_id}/events: the run's events as SSE after Last-Event-ID."""
    run_id = request.path_params["run_id"]
    service = _service(request)
    await service.check_run(run_id, caller(request))
    after = last_event_id(request)
    return sse(_event_stream(service.hub.events(service.runtime, run_id, after), run_id))


async def resume_run(request: Request) -> Response:
    """POST /v1/runs/{run_id}/resume: answer pending tickets."""
    run_id = request.path_params["run_id"]
    service = _service(request)
    principal = caller(request)
    await service.check_run(run_id, principal)
    try:
        body = await read_body(request, ResumeBody)
    except Problem as problem:
        if problem.status == 422 and "/decision" in (problem.field or ""):
            problem.fix = f"send decision as {DECISION_SHAPE}"
        raise
    run = await service.resume(
        principal, run_id, [(item.ticket_id, item.decision) for item in body.decisions]
    )
    return await _answer(run, body.stream)


async def cancel_run(request: Request) -> Response:
    """POST /v1/runs/{run_id}/cancel: stop a live run or end a waiting one."""
    run_id = request.path_params["run_id"]
    service = _service(request)
    outcome = await service.cancel(caller(request), run_id)
    return JSONResponse({"run_id": run_id, "status": outcome}, status_code=202)


def _route(path: str, **handlers: Endpoint) -> Route:
    """One route per path, so a 405's ``Allow`` lists every method of the path."""
    by_method = {method.upper(): handler for method, handler in handlers.items()}

    async def dispatch(request: Request) -> Response:
        return await by_method[request.method](request)

    return Route(path, dispatch, methods=list(by_method))


def rest_routes() -> list[BaseRoute]:
    """The ``/v1`` routes."""
    return [
        _route("/v1/agents", get=list_agents, post=publish_agent),
        _route("/v1/agents/{agent_id}/versions", get=agent_versions),
        _route("/v1/agents/{agent_id}/rollback", post=rollback_agent),
        _route("/v1/threads", get=list_threads, post=create_thread),
        _route("/v1/threads/{thread_id}", get=read_thread),
        _route("/v1/threads/{thread_id}/runs", post=start_run),
        _route("/v1/runs/{run_id}", get=read_run),
        _route("/v1/runs/{run_id}/events", get=run_events),
        _route("/v1/runs/{run_id}/resume", post=resume_run),
        _route("/v1/runs/{run_id}/cancel", post=cancel_run),
    ]
