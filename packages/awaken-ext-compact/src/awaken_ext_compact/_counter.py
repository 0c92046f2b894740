"""``TokenCounter``: tiktoken counts of messages, tool schemas and context, cached.

The request is counted the way OpenAI's cookbook counts chat messages: every
message costs ``PER_MESSAGE`` tokens plus its role and text, a ``name`` adds
its tokens plus ``PER_NAME``, each tool call adds its id, function name and
JSON arguments plus ``PER_TOOL_CALL``, a tool result adds its call id (ids are
counted to stay on the safe side), and the reply is primed with
``REPLY_PRIMING`` tokens. Tool schemas are counted as the JSON of their
OpenAI ``function`` definition. Messages are immutable, so a message's count
is cached under its id and computed once.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from awaken_runtime import ContextMessage, Message, ToolDescriptor

from ._estimate import EstimatedEncoding

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = [
    "PER_MESSAGE",
    "PER_NAME",
    "PER_TOOL_CALL",
    "REPLY_PRIMING",
    "TokenCounter",
    "arguments_json",
]

PER_MESSAGE = 3
"""Tokens every chat message costs beyond its role and content."""
PER_NAME = 1
"""Extra tokens of a message's ``name`` field."""
PER_TOOL_CALL = 3
"""Extra tokens of each tool call beyond its name and arguments."""
REPLY_PRIMING = 3
"""Tokens that prime the assistant's reply in every request."""
NON_TEXT_PART = 85
"""Flat cost of a non-text content part (e.g. a low-detail image)."""


arguments_json = json.JSONEncoder(ensure_ascii=False).encode
"""A tool call's arguments as the JSON text they are counted as: what
``json.dumps(arguments, ensure_ascii=False)`` returns, without building an
encoder per call."""


def tool_schema_json(descriptor: ToolDescriptor) -> str:
    """The JSON text a tool's schema is counted as."""
    return json.dumps(
        {
            "type": "function",
            "function": {
                "name": descriptor.id,
                "description": descriptor.description,
                "parameters": descriptor.parameters,
            },
        },
        ensure_ascii=False,
        separators=(",", ":"),
        sort_keys=True,
    )


class TokenCounter:
    """Counts tokens with one tiktoken encoding; message counts cached per message id.

    ``max_cached`` bounds the per-message cache (oldest entries are dropped
    first). Counting text is ``len(encoding.encode_ordinary(text))``: special
    token markers inside text count as the ordinary text they are. With an
    :class:`EstimatedEncoding` every count is its estimate.
    """

    __slots__ = (
        "_contexts",
        "_last_tools",
        "_messages",
        "_roles",
        "_tools",
        "encoding",
        "max_cached",
    )

    def __init__(
        self, encoding: Encoding | EstimatedEncoding, *, max_cached: int = 500_000
    ) -> None:
        self.encoding = encoding
        self.max_cached = max_cached
        self._messages: dict[str, int] = {}
        self._tools: dict[str, int] = {}
        self._last_tools: tuple[tuple[ToolDescriptor, ...], int] = ((), 0)
        self._contexts: dict[str, int] = {}
        self._roles: dict[str, int] = {}

    @property
    def name(self) -> str:
        """The encoding's name."""
        return str(self.encoding.name)

    @property
    def estimated(self) -> bool:
        """Whether counts are estimates (no tiktoken encoding was available)."""
        return self.name.startswith("estimate:")

    @property
    def cached(self) -> int:
        """How many message counts are cached."""
        return len(self._messages)

    def text(self, text: str) -> int:
        """Tokens of ``text``."""
        return len(self.encoding.encode_ordinary(text)) if text else 0

    def _role(self, role: str) -> int:
        found = self._roles.get(role)
        if found is None:
            found = self._roles[role] = self.text(role)
        return found

    def count_message(self, message: Message) -> int:
        """Tokens of one message (uncached)."""
        enc = self.encoding.encode_ordinary
        total = PER_MESSAGE + self._role(message.role)
        content = message.content
        if isinstance(content, str):
            total += len(enc(content))
        elif content:
            for part in content:
                if part.type == "text":
                    total += len(enc(part.text or ""))
                else:
                    total += NON_TEXT_PART
        if message.name:
            total += len(enc(message.name)) + PER_NAME
        if message.tool_call_id:
            total += len(enc(message.tool_call_id))
        for call in message.tool_calls or ():
            arguments = arguments_json(call.arguments)
            total += PER_TOOL_CALL + len(enc(call.id)) + len(enc(call.name)) + len(enc(arguments))
        return total

    def message(self, message: Message) -> int:
        """Tokens of one message, cached under its id."""
        found = self._messages.get(message.id)
        if found is None:
            found = self.count_message(message)
            cache = self._messages
            if len(cache) >= self.max_cached:
                for key in list(cache)[: max(1, self.max_cached // 4)]:
                    del cache[key]
            cache[message.id] = found
        return found

    def messages(self, messages: Iterable[Message]) -> int:
        """Tokens of several messages (no reply priming)."""
        return sum(self.message(m) for m in messages)

    def tools(self, descriptors: Sequence[ToolDescriptor]) -> int:
        """Tokens of the tool schemas a request carries."""
        # Every step usually carries the same descriptors (frozen objects): compared
        # by identity at C level, they are not looked up one by one again.
        last, total = self._last_tools
        if len(last) == len(descriptors) and all(map(operator.is_, last, descriptors)):
            return total
        total = 0
        cache = self._tools
        for descriptor in descriptors:
            key = descriptor.content_hash
            found = cache.get(key)
            if found is None:
                found = cache[key] = self.text(tool_schema_json(descriptor))
            total += found
        self._last_tools = (tuple(descriptors), total)
        return total

    def context(self, entries: Iterable[ContextMessage]) -> int:
        """Tokens of context entries placed as their own messages."""
        total = 0
        cache = self._contexts
        for entry in entries:
            found = cache.get(entry.content)
            if found is None:
                if len(cache) > 4096:
                    cache.clear()
                found = cache[entry.content] = self.text(entry.content)
            total += PER_MESSAGE + self._role(entry.role) + found
        return total

    def raw_context(self, raw: dict[str, Any] | None) -> int:
        """Tokens of the context entries already staged in the store (other plugins')."""
        if not raw:
            return 0
        entries = []
        for data in raw.values():
            try:
                entries.append(ContextMessage.model_validate(data))
            except ValueError:
                continue
        return self.context(entries)

    def truncate(self, text: str, limit: int) -> tuple[str, int]:
        """The first ``limit`` tokens of ``text`` and the full token count."""
        encoding = self.encoding
        if isinstance(encoding, EstimatedEncoding):  # an estimate cannot decode token ids
            return encoding.truncate(text, limit)
        tokens = encoding.encode_ordinary(text)
        if len(tokens) <= limit:
            return text, len(tokens)
        return encoding.decode(tokens[:limit]), len(tokens)
