"""A stored thread replayed as ``session/update`` notifications (``session/load``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeAlias

from acp import (
    start_tool_call,
    update_agent_message_text,
    update_user_message_text,
)
from acp.helpers import text_block, tool_content, update_tool_call
from acp.schema import AgentMessageChunk, ToolCallProgress, ToolCallStart, UserMessageChunk

from awaken_runtime import Message

from ._updates import tool_call_title

__all__ = ["HistoryUpdate", "history_updates"]

HistoryUpdate: TypeAlias = UserMessageChunk | AgentMessageChunk | ToolCallStart | ToolCallProgress
"""What a replayed thread is made of."""


def history_updates(messages: Iterable[Message]) -> Iterator[HistoryUpdate]:
    """The client's view of ``messages``: user and agent text, each tool call and its result.

    System messages and the runtime's own context messages are not part of the
    conversation the user saw, so they are left out.
    """
    for message in messages:
        if message.role == "user" and message.text:
            yield update_user_message_text(message.text)
        elif message.role == "assistant":
            if message.text:
                yield update_agent_message_text(message.text)
            for call in message.tool_calls or []:
                yield start_tool_call(
                    call.id,
                    tool_call_title(call.name, call.arguments),
                    kind="other",
                    status="pending",
                    raw_input=call.arguments,
                )
        elif message.role == "tool" and message.tool_call_id:
            yield update_tool_call(
                message.tool_call_id,
                status="completed",
                content=[tool_content(text_block(message.text))] if message.text else None,
                raw_output=message.text,
            )
