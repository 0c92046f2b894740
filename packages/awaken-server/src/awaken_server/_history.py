"""Who owns a chat's history: the server (default) or the client (``--history client``).

Threads are server-owned: the store's transcript is what the model sees, and a
client need send only its new message. A client that sends its history anyway
(the AI SDK sends every message) is checked against the thread, never silently
dropped: its user turns must be the thread's, or extend them (a chat seeded by
its client: the turns the server lacks are appended before the new message);
anything else is a 409 naming the first turn that differs. Under
``--history client`` the client's list is authoritative: each request runs on a
new revision of the chat holding exactly that list.

The reason for the default: the transcript holds what the client cannot see or
rebuild (tool calls and results as the model saw them, approvals, cancelled
steps), so a client's copy is a view of it, not a replacement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from awaken_runtime import Message, ToolCall

from ._problems import Problem

__all__ = ["HistoryPolicy", "missing_turns", "ui_text", "ui_to_messages"]

HistoryPolicy = Literal["server", "client"]
"""``--history``: whose list of messages a chat runs on."""

_ENDED_TOOL_STATES = {"output-available", "output-error", "output-denied"}


def ui_text(message: dict[str, Any]) -> str:
    """The text parts of an AI SDK UI message, joined."""
    parts = message.get("parts") or []
    return "".join(
        p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def _tool_messages(n: int, part: dict[str, Any]) -> tuple[ToolCall, Message]:
    state = part.get("state")
    call_id = part.get("toolCallId")
    if state not in _ENDED_TOOL_STATES or not isinstance(call_id, str) or not call_id:
        raise Problem(
            422,
            "invalid-history",
            f"message {n} has a tool call without its result (state {state!r})",
            field=f"/messages/{n}/parts",
            fix="send history whose tool calls have ended, or only the new message",
        )
    name = str(part.get("toolName") or str(part.get("type", "")).removeprefix("tool-"))
    arguments = part.get("input") if isinstance(part.get("input"), dict) else {}
    if state == "output-available":
        output = part.get("output")
        result = output if isinstance(output, str) else json.dumps(output)
    elif state == "output-error":
        result = f"error: {part.get('errorText', '')}"
    else:
        result = "The call was denied."
    return ToolCall(id=call_id, name=name, arguments=arguments), Message.tool(call_id, result)


def ui_to_messages(messages: Sequence[dict[str, Any]], first: int = 0) -> list[Message]:
    """AI SDK UI messages as transcript messages (text, tool calls and their results).

    ``first``: the index of ``messages[0]`` in the request, for the problem's pointer.
    """
    out: list[Message] = []
    for n, message in enumerate(messages, start=first):
        role = message.get("role")
        if role == "user":
            out.append(Message.user(ui_text(message)))
            continue
        if role != "assistant":
            raise Problem(
                422,
                "invalid-history",
                f"message {n} has role {role!r}; history holds user and assistant messages",
                field=f"/messages/{n}/role",
                fix="system prompts come from the agent's config: leave them out",
            )
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        tools = [
            _tool_messages(n, p)
            for p in parts
            if p.get("type") == "dynamic-tool" or str(p.get("type", "")).startswith("tool-")
        ]
        text = ui_text(message)
        if text or tools:
            out.append(Message.assistant(text or None, [call for call, _ in tools]))
            out.extend(result for _, result in tools)
    return out


def missing_turns(prior: Sequence[dict[str, Any]], thread: Sequence[Message]) -> int | None:
    """Where the client's history (``prior``, before its new message) extends the thread.

    ``None``: the client's user turns are the thread's (nothing to append). Otherwise
    the index in ``prior`` of the first user turn the thread lacks (everything from
    there on is appended). Raises 409 when the two differ.
    """
    ours = [m.text for m in thread if m.role == "user"]
    theirs = [(i, ui_text(m)) for i, m in enumerate(prior) if m.get("role") == "user"]
    for turn, (text, (index, sent)) in enumerate(zip(ours, theirs, strict=False)):
        if text != sent:
            raise Problem(
                409,
                "history-diverged",
                f"user turn {turn} differs: the chat holds {_clip(text)}, the client sent "
                f"{_clip(sent)} (message {index})",
                field=f"/messages/{index}",
                fix="reload the chat's messages from GET /v1/threads/{thread_id} (the server "
                "owns the history), send only the new message, or start a new chat",
            )
    if len(theirs) < len(ours):
        raise Problem(
            409,
            "history-diverged",
            f"the client sent {len(theirs)} user turn(s), the chat holds {len(ours)}",
            field="/messages",
            fix="send the whole history or only the new message",
        )
    if len(theirs) == len(ours):
        return None
    return theirs[len(ours)][0]


def _clip(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
