"""Message and tool content in the GenAI conventions' JSON shape (opt-in attributes).

Only used with ``capture_content=True``: prompts, answers, tool arguments and
results may hold personal data, so by default none of it leaves the process.
Messages become ``{"role", "parts": [...]}`` objects with ``text``,
``tool_call`` and ``tool_call_response`` parts, serialized as one JSON string
(span attributes hold strings, numbers and their arrays only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_core import to_json

from awaken_runtime import InferenceResponse, Message, ToolCall

__all__ = ["as_json", "input_messages", "output_messages"]


def as_json(value: Any) -> str:
    """``value`` as compact JSON text (anything pydantic can serialize; others as text)."""
    return to_json(value, fallback=str).decode()


def _call_part(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}


def _parts(message: Message) -> list[dict[str, Any]]:
    content = message.content
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        text = content if isinstance(content, str) else as_json(content)
        return [{"type": "tool_call_response", "id": message.tool_call_id, "response": text}]
    if isinstance(content, str):
        if content:
            parts.append({"type": "text", "content": content})
    elif content:
        for part in content:
            if part.type == "text" and part.text is not None:
                parts.append({"type": "text", "content": part.text})
            else:  # images, audio, files: their type only, never their payload
                parts.append({"type": part.type})
    parts.extend(_call_part(call) for call in message.tool_calls or ())
    return parts


def input_messages(messages: Sequence[Message]) -> str:
    """``gen_ai.input.messages``: what the request sent, system prompt included."""
    return as_json([{"role": m.role, "parts": _parts(m)} for m in messages])


def output_messages(response: InferenceResponse) -> str:
    """``gen_ai.output.messages``: the answer as one assistant message."""
    parts: list[dict[str, Any]] = []
    if response.reasoning:
        parts.append({"type": "reasoning", "content": response.reasoning})
    if response.text:
        parts.append({"type": "text", "content": response.text})
    parts.extend(_call_part(call) for call in response.tool_calls)
    message = {"role": "assistant", "parts": parts, "finish_reason": response.finish_reason}
    return as_json([message])
