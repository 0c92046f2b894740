"""Where a request may start: safe boundaries that never split a tool exchange.

A boundary ``b`` means "messages before ``b`` are left out". It is safe when
message ``b`` is not a tool result: a tool result always follows the
assistant message that called it, so starting on one would separate the
call from its result.
"""

from __future__ import annotations

from collections.abc import Sequence

from awaken_runtime import Message

__all__ = ["choose_cut", "is_safe", "safe_at_or_after", "safe_at_or_before"]


def is_safe(messages: Sequence[Message], b: int) -> bool:
    """Whether starting the request at ``b`` keeps every call with its results."""
    return b >= len(messages) or b <= 0 or messages[b].role != "tool"


def safe_at_or_before(messages: Sequence[Message], b: int, floor: int) -> int:
    """The nearest safe boundary ``<= b`` (never below ``floor``, which must be safe)."""
    while floor < b < len(messages) and messages[b].role == "tool":
        b -= 1
    return b


def safe_at_or_after(messages: Sequence[Message], b: int) -> int:
    """The nearest safe boundary ``>= b`` (skipping orphaned tool results)."""
    n = len(messages)
    while 0 < b < n and messages[b].role == "tool":
        b += 1
    return b


def choose_cut(
    messages: Sequence[Message], start: int, last_user: int, keep_recent: int
) -> int | None:
    """The first message of the raw tail, or ``None`` if nothing can be summarized.

    The tail keeps at least ``keep_recent`` messages (and at least one), always reaches back to
    the newest user message (``last_user``, -1 if none), and starts at a safe
    boundary; the span to summarize is ``[start, cut)``.
    """
    n = len(messages)
    cut = min(n - keep_recent, n - 1)
    if 0 <= last_user < cut:
        cut = last_user
    if cut <= start:
        return None
    cut = safe_at_or_before(messages, cut, start)
    return cut if cut > start else None
