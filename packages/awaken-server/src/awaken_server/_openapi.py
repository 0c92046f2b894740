"""The OpenAPI 3.1 document served at ``/openapi.json``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ._schemas import CreateThread, PublishConfig, ResumeBody, Rollback, StartRun

__all__ = ["openapi_document"]

_PROBLEM = {"$ref": "#/components/schemas/Problem"}
_OBJECT = {"type": "object"}


def _responses(ok: int, *, sse: bool = False, errors: tuple[int, ...] = ()) -> dict[str, Any]:
    content: dict[str, Any] = {"application/json": {"schema": _OBJECT}}
    if sse:
        content["text/event-stream"] = {"schema": {"type": "string"}}
    out: dict[str, Any] = {str(ok): {"description": "success", "content": content}}
    for code in (401, 413, 415, 400, 422, *errors):
        out[str(code)] = {
            "description": "problem",
            "content": {"application/problem+json": {"schema": _PROBLEM}},
        }
    return out


def _op(
    summary: str,
    *,
    body: type[BaseModel] | None = None,
    raw_body: bool = False,
    ok: int = 200,
    sse: bool = False,
    errors: tuple[int, ...] = (),
    params: tuple[str, ...] = (),
    headers: tuple[str, ...] = (),
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "security": [{"bearer": []}],
        "responses": _responses(ok, sse=sse, errors=errors),
    }
    parameters = [
        {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params
    ]
    parameters += [
        {"name": h, "in": "header", "required": False, "schema": {"type": "string"}}
        for h in headers
    ]
    if parameters:
        op["parameters"] = parameters
    if body is not None:
        ref = {"$ref": f"#/components/schemas/{body.__name__}"}
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref}}}
    elif raw_body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": _OBJECT}}}
    return op


def _resume_stream_op() -> dict[str, Any]:
    op = _op(
        "Resume an AI SDK chat's cut stream (replayed from its first chunk)",
        sse=True,
        params=("agent_id", "chat_id"),
        errors=(404,),
    )
    op["responses"]["204"] = {
        "description": "no stream to resume (always under --on-disconnect cancel)"
    }
    return op


def _require_discriminators(schemas: dict[str, Any]) -> None:
    """Make each tagged union's tag required in its variants.

    pydantic leaves a defaulted tag (``kind: "keep_all"``) optional in the JSON
    schema, yet a union member without it cannot be told apart: the server
    refuses it. The document says so.
    """

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            tag = node.get("discriminator", {}).get("propertyName")
            for variant in node.get("oneOf", []) if tag else []:
                ref = variant.get("$ref", "")
                target = schemas.get(ref.rsplit("/", 1)[-1]) if ref else variant
                if isinstance(target, dict) and tag not in target.setdefault("required", []):
                    target["required"].append(tag)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schemas)


def openapi_document(server_url: str) -> dict[str, Any]:
    """The document (every ``/v1`` endpoint with its bodies, statuses and problems)."""
    schemas: dict[str, Any] = {}
    for model in (CreateThread, PublishConfig, ResumeBody, Rollback, StartRun):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    _require_discriminators(schemas)
    schemas["Problem"] = {
        "type": "object",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "field": {"type": "string"},
            "fix": {"type": "string"},
        },
    }
    agent, thread, run = ("agent_id",), ("thread_id",), ("run_id",)
    paths: dict[str, Any] = {
        "/v1/agents": {
            "get": _op("List agents"),
            "post": _op(
                "Publish an agent config version", body=PublishConfig, ok=201, errors=(409,)
            ),
        },
        "/v1/agents/{agent_id}/versions": {
            "get": _op("An agent's config history", params=agent, errors=(404,))
        },
        "/v1/agents/{agent_id}/rollback": {
            "post": _op(
                "Roll back to a version",
                body=Rollback,
                ok=201,
                params=agent,
                errors=(403, 404, 409),
            )
        },
        "/v1/agents/{agent_id}/chat": {
            "post": _op(
                "AI SDK v6 UI message stream",
                raw_body=True,
                sse=True,
                params=agent,
                errors=(404, 409, 429),
            )
        },
        "/v1/agents/{agent_id}/chat/{chat_id}/stream": {"get": _resume_stream_op()},
        "/v1/agents/{agent_id}/ag-ui": {
            "post": _op(
                "AG-UI 1.0 run (RunAgentInput)",
                raw_body=True,
                sse=True,
                params=agent,
                errors=(404, 409, 429),
            )
        },
        "/v1/threads": {
            "get": _op("List this key's threads"),
            "post": _op("Create a thread", body=CreateThread, ok=201, errors=(404,)),
        },
        "/v1/threads/{thread_id}": {
            "get": _op(
                "A thread's messages, state and pending tickets", params=thread, errors=(404,)
            )
        },
        "/v1/threads/{thread_id}/runs": {
            "post": _op(
                "Start a run (JSON result or SSE)",
                body=StartRun,
                sse=True,
                params=thread,
                errors=(404, 409, 429),
            )
        },
        "/v1/runs/{run_id}": {
            "get": _op("A run's record and pending tickets", params=run, errors=(404,))
        },
        "/v1/runs/{run_id}/events": {
            "get": _op(
                "A run's events as SSE, from Last-Event-ID",
                sse=True,
                params=run,
                headers=("Last-Event-ID",),
                errors=(404,),
            )
        },
        "/v1/runs/{run_id}/resume": {
            "post": _op(
                "Answer pending tickets",
                body=ResumeBody,
                sse=True,
                params=run,
                errors=(404, 409, 429),
            )
        },
        "/v1/runs/{run_id}/cancel": {
            "post": _op("Cancel a run", ok=202, params=run, errors=(404, 409))
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Awaken server", "version": "0.1.0"},
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
