"""Messages, tool calls, and conversion to and from the OpenAI chat format."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ContentPart", "Message", "ToolCall", "from_openai", "to_openai"]

Role = Literal["system", "user", "assistant", "tool"]

PROVIDER_CALL_IDS = "provider_call_ids"
"""Assistant-message metadata key: ``{runtime call id: provider call id}`` for calls
whose provider id was not unique (see ``messages/_call_ids.py``)."""


def _reseed() -> None:
    global _stem, _counter
    _stem = os.urandom(10).hex()
    _counter = itertools.count(1)


_stem = ""
_counter = itertools.count(1)
_reseed()
os.register_at_fork(after_in_child=_reseed)  # a forked child must not repeat ids


def new_id(prefix: str = "") -> str:
    """A fresh id, optionally prefixed: 80 random bits per process plus a counter.

    Unique across processes (the random part) and cheap on the per-step path
    (no system call per id, unlike ``uuid4``).
    """
    return f"{prefix}{_stem}{next(_counter):012x}"


class ToolCall(BaseModel):
    """A tool call the model asked for, with parsed JSON arguments.

    ``parse_error`` is set when the model sent arguments that are not a JSON
    object; the call then becomes a model-visible error result.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    parse_error: str | None = None
    raw_arguments: str | None = None
    """The model's argument text when it did not parse (sent back to the provider
    verbatim, so the model sees what it wrote)."""


class ContentPart(BaseModel):
    """One part of multi-part content, kept in OpenAI's shape (``type`` + payload)."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)
    type: str
    text: str | None = None


class Message(BaseModel):
    """One transcript entry. Messages are immutable once created."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    id: str = Field(default_factory=new_id)
    role: Role
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def system(cls, text: str, **kw: Any) -> Message:
        """A system message."""
        return cls(role="system", content=text, **kw)

    @classmethod
    def user(cls, text: str, **kw: Any) -> Message:
        """A user message."""
        return cls(role="user", content=text, **kw)

    @classmethod
    def assistant(
        cls, text: str | None = None, tool_calls: Sequence[ToolCall] | None = None, **kw: Any
    ) -> Message:
        """An assistant message, optionally with tool calls."""
        return cls(
            role="assistant",
            content=text,
            tool_calls=list(tool_calls) if tool_calls else None,
            **kw,
        )

    @classmethod
    def tool(cls, call_id: str, content: str, *, name: str | None = None, **kw: Any) -> Message:
        """A tool result answering the call ``call_id``."""
        return cls(role="tool", content=content, tool_call_id=call_id, name=name, **kw)

    @property
    def text(self) -> str:
        """The text content (text parts joined); empty when there is none."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text or "" for part in self.content if part.type == "text")


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Convert messages to OpenAI chat-completions dicts (the format litellm speaks)."""
    # Calls the runtime gave fresh ids go out under the provider's own ids again.
    provider_ids: dict[str, str] = {}
    return [openai_message(msg, provider_ids) for msg in messages]


def openai_message(msg: Message, provider_ids: dict[str, str]) -> dict[str, Any]:
    """One message as an OpenAI chat-completions dict.

    ``provider_ids`` maps the runtime's call ids to the provider's (see
    ``PROVIDER_CALL_IDS``) for the messages before ``msg``; an assistant
    message's own renames are added to it, so the tool results after it go
    out under the provider's ids.
    """
    item: dict[str, Any] = {"role": msg.role}
    if isinstance(msg.content, list):
        item["content"] = [part.model_dump(exclude_none=True) for part in msg.content]
    else:
        item["content"] = msg.content
    if msg.tool_calls:
        renamed = msg.metadata.get(PROVIDER_CALL_IDS) if msg.metadata else None
        if renamed:
            provider_ids.update(renamed)
        item["tool_calls"] = [
            {
                "id": provider_ids.get(call.id, call.id) if renamed else call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False)
                    if call.raw_arguments is None
                    else call.raw_arguments,
                },
            }
            for call in msg.tool_calls
        ]
    if msg.tool_call_id is not None:
        call_id = msg.tool_call_id
        item["tool_call_id"] = provider_ids.get(call_id, call_id) if provider_ids else call_id
    if msg.name is not None:
        item["name"] = msg.name
    return item


MAX_ARGUMENT_DEPTH = 64
"""How deeply the containers (objects, arrays) of tool-call arguments may nest; the
arguments object is level 1. Deeper arguments become a model-visible argument
error, and are never stored: a thread must stay loadable by every JSON reader."""


def too_deep(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether dicts/lists in ``value`` nest deeper than ``limit`` (``value`` is level 1)."""
    stack = [(value, 1)]
    while stack:  # iterative: a recursive walk would itself overflow on poison input
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _depth_error() -> str:
    return (
        f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels of objects and arrays; "
        f"send flatter arguments"
    )


def with_depth_limit(call: ToolCall) -> ToolCall:
    """``call``, or (arguments too deep) a copy without them, carrying the argument error."""
    if call.parse_error is None and too_deep(call.arguments):
        return call.model_copy(update={"arguments": {}, "parse_error": _depth_error()})
    return call


def _parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, dict):
        return (raw, None) if not too_deep(raw) else ({}, _depth_error())
    if raw is None or raw == "":
        return {}, None
    try:
        parsed = json.loads(raw)
    except RecursionError:
        return {}, _depth_error()
    except (TypeError, ValueError) as exc:
        return {}, f"arguments are not valid JSON ({exc}): {str(raw)[:200]!r}"
    if isinstance(parsed, dict) and too_deep(parsed):
        return {}, _depth_error()
    if not isinstance(parsed, dict):
        return {}, f"arguments must be a JSON object, got {type(parsed).__name__}"
    return parsed, None


def from_openai(items: Iterable[dict[str, Any]]) -> list[Message]:
    """Convert OpenAI chat-completions dicts to messages (inverse of :func:`to_openai`)."""
    out: list[Message] = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list):
            content = [ContentPart.model_validate(part) for part in content]
        calls = None
        if item.get("tool_calls"):
            calls = []
            for raw in item["tool_calls"]:
                fn = raw.get("function", {})
                text = fn.get("arguments")
                args, error = _parse_arguments(text)
                calls.append(
                    ToolCall(
                        id=raw["id"],
                        name=fn.get("name", ""),
                        arguments=args,
                        parse_error=error,
                        raw_arguments=text if error is not None and isinstance(text, str) else None,
                    )
                )
        out.append(
            Message(
                role=item["role"],
                content=content,
                tool_calls=calls,
                tool_call_id=item.get("tool_call_id"),
                name=item.get("name"),
            )
        )
    return out
