"""``BoundTokens``: an upper bound of a thread's tokens, without tokenizing.

Every token of an encoding stands for at least one byte of the UTF-8 text it
encodes (tiktoken's byte-level BPE, and the estimate, which never exceeds
the byte count either), so a text's byte count bounds its tokens. A message's
bound is :meth:`TokenCounter.count_message` term by term with every token
count replaced by a byte count: it costs a ``len`` where counting costs a
tokenizer pass (about 0.1 us against 10-20 us for a short message).

The hook plans each request with these bounds first. While the bounded plan
stays under the trigger and no tool result's bound exceeds the cut limit,
nothing the exact count could say would change the request (no compaction,
no drop, no cut), so the thread is not tokenized at all; only when the bound
reaches the trigger does the hook count the thread for real (once, then
incrementally, as before). A long thread in a large window, the common case,
therefore costs a byte count per new message.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Any

from awaken_runtime import Message

from ._counter import NON_TEXT_PART, PER_MESSAGE, PER_NAME, PER_TOOL_CALL, arguments_json
from ._index import TokenSums

__all__ = ["BOUND_NAME", "BoundTokens", "arguments_bound", "message_bound", "text_bound"]

BOUND_NAME = "bound:utf8"
"""What a :class:`BoundTokens` counts (the ``encoding`` of its checkpoints)."""


def text_bound(text: str) -> int:
    """At least the tokens of ``text`` in any encoding: its UTF-8 byte count."""
    if text.isascii():  # O(1) in CPython: the string knows it is ASCII
        return len(text)
    # A lone surrogate is tokenized as U+FFFD (3 bytes), and surrogatepass writes 3.
    return len(text.encode("utf-8", "surrogatepass"))


def message_bound(message: Message) -> int:
    """At least :meth:`TokenCounter.count_message` of ``message``, whatever the encoding."""
    content = message.content
    total = PER_MESSAGE + len(message.role)
    if isinstance(content, str):  # the usual message: its text, and nothing else to add
        total += len(content) if content.isascii() else text_bound(content)
    elif content:
        for part in content:
            total += text_bound(part.text or "") if part.type == "text" else NON_TEXT_PART
    if message.tool_calls or message.name or message.tool_call_id:
        total += _extras_bound(message)
    return total


def _extras_bound(message: Message) -> int:
    total = 0
    if message.name:
        total += text_bound(message.name) + PER_NAME
    if message.tool_call_id:
        total += text_bound(message.tool_call_id)
    for call in message.tool_calls or ():
        total += PER_TOOL_CALL + text_bound(call.id) + text_bound(call.name)
        total += arguments_bound(call.arguments)
    return total


def arguments_bound(arguments: dict[str, Any]) -> int:
    """At least the UTF-8 size of ``arguments_json(arguments)``.

    Flat arguments of plain strings (printable ASCII without quotes or
    backslashes, which JSON writes as they are), ints, bools and ``None`` are
    measured without encoding them (``{"k": v, ...}``: 2 + 4 per item + 2 between
    items + keys and values); anything else is encoded.
    """
    total = 2 + 2 * max(0, len(arguments) - 1)
    for key, value in arguments.items():
        if type(key) is not str or not _plain(key):
            return text_bound(arguments_json(arguments))
        total += len(key) + 4
        kind = type(value)
        if kind is str and _plain(value):
            total += len(value) + 2
        elif value is None or kind is bool:
            total += 5  # null, true, false
        elif kind is int:
            total += len(str(value))
        else:
            return text_bound(arguments_json(arguments))
    return total


def _plain(text: str) -> bool:
    """Whether JSON writes ``text`` as it is (between quotes)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


class BoundTokens(TokenSums):
    """Upper bounds of a thread's message tokens, as prefix sums.

    Nothing is cut: a tool result whose bound exceeds ``big_limit`` is only
    recorded in ``big`` (a *suspect*: the exact count might cut it), and
    :meth:`suspects` says whether a span holds one.
    """

    __slots__ = ()

    def __init__(self, big_limit: int | None = None) -> None:
        super().__init__(message_bound, big_limit)

    @property
    def name(self) -> str:
        """:data:`BOUND_NAME`."""
        return BOUND_NAME

    def _cut(self, i: int, message: Message, limit: int) -> int:
        tokens = message_bound(message)
        if i not in self._cuts:
            insort(self.big, i)
        self._cuts[i] = (-1, tokens, None)
        return tokens

    def suspects(self, start: int, stop: int) -> bool:
        """Whether a tool result in ``[start, stop)`` might be cut by an exact count."""
        at = bisect_left(self.big, start)
        return at < len(self.big) and self.big[at] < stop
