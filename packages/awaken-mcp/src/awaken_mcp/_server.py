"""Awaken tools, and optionally agents, as an MCP server (the SDK's low-level ``Server``).

What is offered: the *registered* tools (``with_tool``, discovered tools)
that the named agents list in ``tool_ids``, under their own ids, with their
descriptions and JSON Schemas; and with ``agents_as_tools`` one tool per
agent (named after it) that runs the agent on a prompt. Plugin tools (memory,
skills, catalog tools) are not offered: they belong to runs, whose state and
gates they need. A tool is called outside any run: it gets a fresh run id, an
empty read-only state, and whatever state commands it stages are dropped, so
tools that depend on thread state should be offered through their agent.
An agent call is a normal run (every gate applies, permissions included),
with the caller's profile; a run that waits for a human decision answers
with an error saying so, since MCP has no way to carry the ticket back.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.server import Server

from awaken_runtime import (
    CancellationToken,
    Phase,
    Runtime,
    Store,
    Tool,
    ToolCallContext,
    ToolOutput,
)

from ._content import to_result

__all__ = ["AGENT_INPUT_SCHEMA", "PRINCIPAL_STATE", "build_server", "offered_tools"]

log = logging.getLogger("awaken_mcp")

PRINCIPAL_STATE = "awaken_profile"
"""Request-state attribute the HTTP app sets to the caller's profile id."""

AGENT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "prompt": {"type": "string", "description": "What to ask the agent."},
        "thread_id": {
            "type": "string",
            "description": "Continue this thread (default: a new thread per call).",
        },
    },
    "required": ["prompt"],
    "additionalProperties": False,
}


def offered_tools(runtime: Runtime, agent_ids: Sequence[str]) -> dict[str, Tool]:
    """The registered tools the agents list, by id (unknown agents raise, naming them)."""
    out: dict[str, Tool] = {}
    for agent_id in agent_ids:
        config = runtime.resolve(agent_id).config  # raises ResolutionError on unknown ids
        for tid in config.tool_ids:
            tool = runtime.registries.tools.get(tid)
            if tool is not None:
                out[tid] = tool
    return out


def _profile(ctx: Any) -> str:
    request = getattr(ctx, "request", None)
    state = getattr(request, "state", None)
    return str(getattr(state, PRINCIPAL_STATE, "default"))


def build_server(
    runtime: Runtime,
    agent_ids: Sequence[str],
    *,
    agents_as_tools: bool = False,
    name: str = "awaken",
) -> Server[Any]:
    """An MCP server offering the agents' registered tools (and the agents, if asked)."""
    tools = offered_tools(runtime, agent_ids)
    agents = list(agent_ids) if agents_as_tools else []
    clash = sorted(set(tools) & set(agents))
    if clash:
        raise ValueError(
            f"{clash[0]!r} is both a tool and an agent; rename one, or serve without agents"
        )
    listing = [
        types.Tool(
            name=tid,
            description=t.descriptor.description,
            input_schema=t.descriptor.parameters,
        )
        for tid, t in tools.items()
    ] + [
        types.Tool(
            name=aid,
            description=f"Ask the agent {aid!r}. "
            + (runtime.resolve(aid).config.instructions[:300] or ""),
            input_schema=AGENT_INPUT_SCHEMA,
        )
        for aid in agents
    ]
    schemas = {t.name: t.input_schema for t in listing}

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        if params.name in tools:
            return await _call_tool(tools[params.name], params.name, args)
        if params.name in agents:
            return await _call_agent(runtime, params.name, args, _profile(ctx))
        return types.CallToolResult(
            content=[types.TextContent(text=f"unknown tool {params.name!r}")], is_error=True
        )

    return Server(
        name,
        version="0.1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=schemas.get,
    )


async def _call_tool(tool: Tool, tool_id: str, args: dict[str, Any]) -> types.CallToolResult:
    coerce = getattr(tool, "coerce_arguments", None)
    if coerce is not None:
        try:
            args = coerce(args)
        except ValueError as exc:
            return to_result(ToolOutput.error(f"Invalid arguments for tool {tool_id!r}: {exc}"))
    call_id = uuid.uuid4().hex
    ctx = ToolCallContext(
        store=Store({}),
        run_id=f"mcp-{call_id}",
        thread_id="mcp",
        call_id=call_id,
        tool_id=tool_id,
        cancel=CancellationToken(),
    )
    try:
        output = await tool.call(args, ctx)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a tool's failure is the caller's error result, as in a run
        log.exception("tool %r raised over MCP", tool_id)
        output = ToolOutput.error(f"Tool {tool_id!r} failed: {type(exc).__name__}: {exc}")
    return to_result(output)


async def _call_agent(
    runtime: Runtime, agent_id: str, args: dict[str, Any], profile: str
) -> types.CallToolResult:
    prompt = args.get("prompt")
    thread = args.get("thread_id")
    if not isinstance(prompt, str) or not prompt.strip():
        return to_result(ToolOutput.error("`prompt` must be a non-empty string"))
    if thread is not None and not isinstance(thread, str):
        return to_result(ToolOutput.error("`thread_id` must be a string"))
    state = await runtime.run(agent_id, prompt, thread_id=thread, profile_id=profile)
    if state.phase is Phase.WAITING:
        reasons = ", ".join(t.await_reason.value for t in state.tickets)
        return to_result(
            ToolOutput.error(
                f"agent {agent_id!r} is waiting for a human decision ({reasons}) on thread "
                f"{state.thread_id!r}; answer it through awaken (REST or CLI), then call again"
            )
        )
    failure = getattr(state.end_cause, "failure", None)
    if failure is not None:
        return to_result(ToolOutput.error(f"agent {agent_id!r} failed: {failure}"))
    return to_result(ToolOutput.ok(state.final_text or ""))
