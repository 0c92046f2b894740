"""``McpTool``: one tool of an MCP server as an awaken ``Tool``."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from awaken_runtime import Respond, ToolCallContext, ToolDescriptor, ToolOutput

from ._connection import McpConnection
from ._names import tool_id

__all__ = ["McpTool"]


class McpTool:
    """Calls ``name`` on its server's shared connection.

    The id is ``<server>__<tool>`` (see ``_names``); description and JSON
    Schema are the server's. Gates see the model's arguments as they are;
    the server validates them, and its complaint comes back as an error the
    model reads. Cancelling the run cancels the awaited request, which the
    SDK turns into the MCP cancellation (``notifications/cancelled``, or the
    closed request on a stateless HTTP connection).
    """

    def __init__(self, connection: McpConnection, spec: types.Tool) -> None:
        self.connection = connection
        self.name = spec.name
        server = connection.config.id
        description = spec.description or spec.title or f"{spec.name} (MCP server {server})"
        self._descriptor = ToolDescriptor(
            id=tool_id(server, spec.name), description=description, parameters=spec.input_schema
        )

    @property
    def descriptor(self) -> ToolDescriptor:
        """The model-visible descriptor (namespaced id, the server's description and schema)."""
        return self._descriptor

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolOutput:
        """Call the tool on the server (with the human's answer, on a resumed elicitation)."""
        decision = ctx.decision
        answer = decision.value if isinstance(decision, Respond) else None
        return await self.connection.call(self.name, args, answer, ctx.idempotency_key)
