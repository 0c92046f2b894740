"""Awaken's run events as ACP ``session/update`` payloads, and a run's end as a stop reason.

Pure functions: no connection, no runtime. ``updates_for`` turns one
``AgentEvent`` into the updates a client shows (text and reasoning chunks, a
tool call when the model made it, its update when it finished); ``stop_reason``
names how the turn ended in ACP's vocabulary.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from acp import start_tool_call, update_agent_message_text, update_agent_thought_text
from acp.helpers import text_block, tool_content, update_tool_call
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    StopReason,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
)

from awaken_runtime import (
    AgentEvent,
    Cancelled,
    MaxSteps,
    RunState,
    Stopped,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)

__all__ = ["SessionUpdate", "stop_reason", "tool_call_title", "updates_for"]

SessionUpdate: TypeAlias = AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress
"""The ``session/update`` payloads a prompt turn sends."""

# A call the runtime answered without running the tool is still a finished call to
# the client; only errors and blocked calls (a gate, a denial) are failures.
_FAILED = frozenset({"error", "blocked"})


def tool_call_title(name: str, arguments: dict[str, Any]) -> str:
    """A one-line title for a tool call: its name and a short view of its arguments."""
    shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"{name}({shown})"


def updates_for(event: AgentEvent) -> list[SessionUpdate]:
    """The ACP updates one run event becomes (often none: steps, run start, finish)."""
    if isinstance(event, TextDelta):
        if not event.delta:
            return []
        if event.channel == "reasoning":
            return [update_agent_thought_text(event.delta)]
        return [update_agent_message_text(event.delta)]
    if isinstance(event, ToolCallReady):
        return [
            start_tool_call(
                event.call_id,
                tool_call_title(event.name, event.arguments),
                kind="other",
                status="pending",
                raw_input=event.arguments,
            )
        ]
    if isinstance(event, ToolCallDone):
        if event.outcome == "suspended":
            # Parked for a decision: it stays pending until the permission answer.
            return []
        status: ToolCallStatus = "failed" if event.outcome in _FAILED else "completed"
        return [
            update_tool_call(
                event.call_id,
                status=status,
                content=[tool_content(text_block(event.output))] if event.output else None,
                raw_output=event.output,
            )
        ]
    return []


def stop_reason(state: RunState) -> StopReason:
    """ACP's stop reason for a run that ended as ``state`` says.

    Errors are not a stop reason: the caller answers the prompt with a JSON-RPC
    error naming the failure instead.
    """
    cause = state.end_cause
    if isinstance(cause, Cancelled):
        return "cancelled"
    if isinstance(cause, MaxSteps):
        return "max_turn_requests"
    if isinstance(cause, Stopped) and state.finish_reason == "length":
        # A final answer cut off by the output limit (AgentConfig.truncation = "stop").
        return "max_tokens"
    return "end_turn"
