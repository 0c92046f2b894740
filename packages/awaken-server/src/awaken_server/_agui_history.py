"""AG-UI messages in the shape the history policy reads (AI SDK UI messages).

An AG-UI client sends its whole list on every run; the history policy
(``_history``) checks it against the thread the same way for both protocols.
System, developer, activity and reasoning messages are the client's own
context, not turns of the transcript, and are not compared.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ag_ui import core as ag

__all__ = ["as_ui_messages", "user_text"]


def user_text(message: Any) -> str | None:
    """The text of an AG-UI user message (text parts joined), ``None`` if it has none."""
    content = message.content
    if isinstance(content, str):
        return content
    texts = [part.text for part in content if isinstance(part, ag.TextInputContent)]
    return "".join(texts) if texts else None


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def as_ui_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """User and assistant messages (tool calls with their results as tool parts)."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ag.ToolMessage)}
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ag.UserMessage):
            text = user_text(message) or ""
            out.append({"role": "user", "parts": [{"type": "text", "text": text}]})
        elif isinstance(message, ag.AssistantMessage):
            parts: list[dict[str, Any]] = []
            if message.content:
                parts.append({"type": "text", "text": message.content})
            for call in message.tool_calls or []:
                result = results.get(call.id)
                part: dict[str, Any] = {
                    "type": "dynamic-tool",
                    "toolCallId": call.id,
                    "toolName": call.function.name,
                    "input": _arguments(call.function.arguments),
                    "state": "input-available",
                }
                if result is not None and result.error:
                    part.update(state="output-error", errorText=result.error)
                elif result is not None:
                    part.update(state="output-available", output=result.content)
                parts.append(part)
            out.append({"role": "assistant", "parts": parts})
    return out
