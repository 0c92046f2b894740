"""Awaken tools, and optionally agents, as an MCP server (the SDK's low-level ``Server``).

What is offered: the *registered* tools (``with_tool``, discovered tools)
that the named agents list in ``tool_ids``, under their own ids, with their
descriptions and JSON Schemas; and with ``agents_as_tools`` one tool per
agent (named after it) that runs the agent on a prompt. Plugin tools (memory,
skills, catalog tools) are not offered: they belong to runs.

Policy holds on every path: a tool is served through the first served agent
that lists it and has a tool gate (the permissions plugin, or any other), and
each call is a run of that agent whose one turn is the call (``_direct``), so
the agent's whole gate chain decides it. A tool whose agents have no gate at
all is not offered, unless ``tools_ungated`` says to serve it bare. Tickets a
call parks on are asked of the client (``_calls``).
"""

from __future__ import annotations

import logging
import secrets
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from awaken_runtime import Runtime, Tool

from ._calls import Caller, Calls, Target
from ._direct import install
from ._logging import LogForwarding
from ._owners import McpOwners
from ._policy_view import hidden_by_policy

__all__ = [
    "AGENT_INPUT_SCHEMA",
    "PRINCIPAL_STATE",
    "Offer",
    "build_server",
    "offered_tools",
    "plan_offer",
]

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


@dataclass
class Offer:
    """What a server offers, by MCP tool name."""

    targets: dict[str, Target] = field(default_factory=dict)
    """Gated direct tools and agents-as-tools."""
    ungated: dict[str, Tool] = field(default_factory=dict)
    """Tools served bare (``tools_ungated``)."""
    skipped: list[str] = field(default_factory=list)
    """Tools not offered: no agent listing them has a gate, and ``tools_ungated`` is off."""
    unlisted: set[str] = field(default_factory=set)
    """Targets left out of ``tools/list``: their agent's policy denies them outright (a
    call is still answered, naming the rule)."""


def _gated(runtime: Runtime, agent_id: str) -> bool:
    return any(p.manifest.bound.tool_gates for p in runtime.resolve(agent_id).plugins)


def plan_offer(
    runtime: Runtime,
    agent_ids: Sequence[str],
    *,
    agents_as_tools: bool = False,
    tools_ungated: bool = False,
) -> Offer:
    """Which agent serves each tool: the first one listing it that has a gate."""
    offer = Offer()
    gated = [a for a in agent_ids if _gated(runtime, a)]
    for agent_id in gated:
        for tid in offered_tools(runtime, [agent_id]):
            if tid not in offer.targets:
                offer.targets[tid] = Target(agent_id, tid)
                if hidden_by_policy(runtime, agent_id, tid):
                    offer.unlisted.add(tid)
    for tid, tool in offered_tools(runtime, [a for a in agent_ids if a not in gated]).items():
        if tid in offer.targets:
            continue
        if tools_ungated:
            offer.ungated[tid] = tool
        else:
            offer.skipped.append(tid)
    if agents_as_tools:
        for agent_id in agent_ids:
            if agent_id in offer.targets or agent_id in offer.ungated:
                raise ValueError(
                    f"{agent_id!r} is both a tool and an agent; rename one, or serve without agents"
                )
            offer.targets[agent_id] = Target(agent_id, None)
    return offer


def caller_of(ctx: Any) -> Caller:
    """The caller of one request and what its connection can do."""
    session = getattr(ctx, "session", None)
    caps = getattr(session, "client_capabilities", None)
    elicitation = getattr(caps, "elicitation", None)
    # An empty `elicitation: {}` (2025-06-18 clients) means form mode.
    form = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
    version = str(getattr(session, "protocol_version", ""))
    return Caller(
        profile=_profile(ctx),
        session=session,
        request_id=getattr(ctx, "request_id", None),
        can_request=bool(getattr(session, "can_send_request", False)),
        elicits=form,
        modern=version in MODERN_PROTOCOL_VERSIONS,
    )


def build_server(
    runtime: Runtime,
    agent_ids: Sequence[str],
    *,
    agents_as_tools: bool = False,
    tools_ungated: bool = False,
    forward_logs: bool = False,
    secret: bytes | None = None,
    name: str = "awaken",
) -> Server[Any]:
    """An MCP server offering the agents' tools (each through its agent's gates) and,
    with ``agents_as_tools``, the agents.

    ``secret`` signs the ``request_state`` of 2026-07-28 retries; give every worker
    serving one endpoint the same one (default: random, good for one process).
    ``forward_logs`` offers the ``logging`` capability: each call's log records go
    to the client at its level (``_logging``).
    """
    offer = plan_offer(
        runtime, agent_ids, agents_as_tools=agents_as_tools, tools_ungated=tools_ungated
    )
    install(runtime)
    listing: list[types.Tool] = []
    for tool_name, target in offer.targets.items():
        if tool_name in offer.unlisted:
            continue
        if target.tool is None:
            instructions = runtime.resolve(target.agent).config.instructions[:300]
            description = f"Ask the agent {target.agent!r}. {instructions}".strip()
            listing.append(
                types.Tool(name=tool_name, description=description, input_schema=AGENT_INPUT_SCHEMA)
            )
        else:
            descriptor = runtime.registries.tools[target.tool].descriptor
            listing.append(_listed(tool_name, descriptor))
    listing += [_listed(n, t.descriptor) for n, t in offer.ungated.items()]
    schemas = {t.name: t.input_schema for t in listing}
    calls = Calls(
        runtime,
        offer.targets,
        dict(offer.ungated),
        McpOwners(runtime.store),
        secret if secret is not None else secrets.token_bytes(32),
    )

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    logs = LogForwarding() if forward_logs else None

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        if logs is None:
            return await calls.call(caller_of(ctx), params)
        async with logs.forwarding(ctx):
            return await calls.call(caller_of(ctx), params)

    handlers: dict[str, Any] = {}
    if logs is not None:  # each capability is advertised only when it is on
        handlers["on_set_logging_level"] = logs.set_level
    with warnings.catch_warnings():
        # logging is deprecated from 2026-07-28 on; handshake-era clients still use it.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return Server(
            name,
            version="0.1.0",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            get_tool_input_schema=schemas.get,
            **handlers,
        )


def _listed(name: str, descriptor: Any) -> types.Tool:
    return types.Tool(
        name=name,
        description=descriptor.description or f"The awaken tool {name!r}.",
        input_schema=descriptor.parameters,
    )
