"""The model-facing tools: ``remember``, ``recall`` and ``forget``.

Each tool reads the committed records from its read-only store view and
returns its write as ``ToolOutput.state``; the loop checks those commands
against the plugin's bound and commits them after the call.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from awaken_runtime import FunctionTool, ToolCallContext, ToolOutput, tool

from ._bank import OwnerKey
from ._ops import MemoryOps
from ._records import RECORDS_KEY, MemorySource

__all__ = ["TOOL_IDS", "memory_tools"]

TOOL_IDS = ("remember", "recall", "forget")
"""Ids of the tools the plugin contributes (declared in its bound)."""


def memory_tools(
    ops: MemoryOps, owner_of: Callable[[ToolCallContext], OwnerKey]
) -> list[FunctionTool]:
    """The three tools bound to ``ops``; ``owner_of`` maps a call to its scope owner."""
    scope = ops.config.state_scope
    max_chars = ops.config.max_text_chars

    def source(ctx: ToolCallContext) -> MemorySource:
        return MemorySource(
            thread_id=ctx.thread_id, run_id=ctx.run_id, message_id=ctx.call_id, via="tool"
        )

    @tool
    async def remember(
        text: str, ctx: ToolCallContext, kind: str = "fact", tags: list[str] | None = None
    ) -> ToolOutput:
        """Store a long-term memory about the user or the task, for later conversations.

        Write one self-contained fact per call. A memory very similar to an
        existing one updates that memory instead of adding a duplicate.

        Args:
            text: The memory, as a short self-contained statement.
            kind: "fact", "preference", "event", or another short category.
            tags: Optional keywords for the memory.
        """
        text = text.strip()
        if not text:
            return ToolOutput.error("Nothing to remember: 'text' is empty.")
        if len(text) > max_chars:
            return ToolOutput.error(
                f"Memory too long ({len(text)} characters; at most {max_chars}). "
                f"Split it into shorter facts."
            )
        records = ctx.store.get_value(RECORDS_KEY, scope)
        done = await ops.remember(
            owner_of(ctx), records, text, kind=kind.strip() or None, tags=tags, source=source(ctx)
        )
        verb = "Updated existing memory" if done.merged_into_existing else "Remembered"
        return ToolOutput.ok(f"{verb} {done.record.id}.", state=[done.command])

    @tool
    async def recall(query: str, ctx: ToolCallContext, k: int = 5) -> ToolOutput:
        """Search long-term memories by meaning.

        Args:
            query: What to look for.
            k: How many memories to return at most (1-50).
        """
        k = max(1, min(k, 50))
        records = ctx.store.get_value(RECORDS_KEY, scope)
        hits = await ops.recall(owner_of(ctx), records, query, k)
        if not hits:
            return ToolOutput.ok("No matching memories.")
        found = [
            {
                "id": record.id,
                "text": record.text,
                "kind": record.kind,
                "tags": list(record.tags),
                "updated": record.updated_at.date().isoformat(),
                "score": round(score, 3),
            }
            for record, score in hits
        ]
        return ToolOutput.ok(json.dumps(found, ensure_ascii=False))

    @tool
    def forget(memory_id: str, ctx: ToolCallContext) -> ToolOutput:
        """Delete a long-term memory by its id (ids are shown as [mem_...]).

        Args:
            memory_id: The id of the memory to delete.
        """
        records = ctx.store.get_value(RECORDS_KEY, scope)
        command = ops.forget(owner_of(ctx), records, memory_id.strip(), source=source(ctx))
        if command is None:
            return ToolOutput.error(f"No memory with id {memory_id!r}; use recall to find ids.")
        return ToolOutput.ok(f"Forgot {memory_id.strip()}.", state=[command])

    return [remember, recall, forget]
