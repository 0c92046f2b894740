"""A tool served with ``--tools-ungated``: called outside any run, no gate at all.

Only for tools whose agent has no gate (no policy to hold), and only when the
deployer asked for it: ``awaken mcp serve`` prints that loudly at start. The
call gets a fresh run id, an empty read-only state, arguments coerced as in a
run (``@tool`` tools); staged state commands are dropped and an exception is
an error result.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import mcp_types as types

from awaken_runtime import CancellationToken, Store, Tool, ToolCallContext, ToolOutput

from ._content import to_result

__all__ = ["call_ungated"]

log = logging.getLogger("awaken_mcp")


async def call_ungated(tool: Tool, tool_id: str, args: dict[str, Any]) -> types.CallToolResult:
    """Call ``tool`` outside any run."""
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
