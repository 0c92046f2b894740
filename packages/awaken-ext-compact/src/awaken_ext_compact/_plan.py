"""Pieces of a planned request: the usable input, where the window starts, and
the context entries the hook injects (summary, pinned user request, drop marker).
"""

from __future__ import annotations

from collections.abc import Sequence

from awaken_runtime import Band, ContextMessage, InferenceRequest, Message, MessageView

from ._config import CompactConfig
from ._counter import TokenCounter
from ._state import Summary

__all__ = [
    "DROPPED_KEY",
    "PINNED_KEY",
    "SUMMARY_BAND",
    "SUMMARY_KEY",
    "drop_marker",
    "pinned_entry",
    "summary_entry",
    "tool_result_cap",
    "usable_input",
    "window_start",
]

SUMMARY_BAND = Band.SESSION
"""The band the summary and markers are injected into (right after the system prompt)."""
SUMMARY_KEY = "compact.summary"
"""Context-message key of the summary."""
PINNED_KEY = "compact.pinned_user"
"""Context-message key of the newest user message, once the request no longer carries it."""
DROPPED_KEY = "compact.dropped"
"""Context-message key of the marker for an emergency drop."""
MIN_TOOL_RESULT_CAP = 64
"""The default tool-result cap never goes below this many tokens."""


def usable_input(request: InferenceRequest, config: CompactConfig) -> int | None:
    """Context window minus max output tokens, or ``None`` when the window is unknown."""
    window = config.context_window or request.model.context_window
    if window is None:
        return None
    out = request.params.max_output_tokens or request.model.max_output_tokens or 0
    return max(1, window - out)


def tool_result_cap(config: CompactConfig, limit: int | None) -> int | None:
    """Tokens one tool result may take in a request: the configured cap, or
    ``max_tool_result_ratio`` of the usable input ``limit``; ``None``: no cap."""
    if config.max_tool_result_tokens is not None:
        return config.max_tool_result_tokens
    if config.max_tool_result_ratio is None or limit is None:
        return None
    return max(MIN_TOOL_RESULT_CAP, int(limit * config.max_tool_result_ratio))


def window_start(request: Sequence[Message], messages: MessageView) -> tuple[int, Message | None]:
    """Transcript index where the request's window starts, and its system prompt if any."""
    size, n = len(request), len(messages)
    if size == 0:
        return n, None
    first = request[0]
    k = n - size
    if 0 <= k < n and messages[k].id == first.id:
        return k, None
    return n - (size - 1), first


def summary_entry(summary: Summary) -> ContextMessage:
    """The summary as a request-only context message."""
    return ContextMessage(
        key=SUMMARY_KEY,
        band=SUMMARY_BAND,
        content="Summary of the earlier conversation (those messages are not shown):\n\n"
        + summary.text,
    )


def pinned_entry(message: Message, counter: TokenCounter, limit: int | None) -> ContextMessage:
    """The newest user message, re-sent as a user-role context entry after the summary.

    It keeps the user's request in every request of a long tool-using run
    whose earlier steps (the user message among them) were summarized. A
    message longer than a quarter of the usable input (2,000 tokens with an
    unknown window; at least 256) is cut, with a marker.
    """
    budget = max(256, limit // 4) if limit is not None else 2000
    text, full = counter.truncate(message.text, budget)
    if full > budget:
        text += f"\n[compact: the user's message is cut to {budget} of {full} tokens here]"
    return ContextMessage(key=PINNED_KEY, band=SUMMARY_BAND, content=text, priority=1, role="user")


def drop_marker(dropped: int, summary: Summary | None) -> ContextMessage:
    """The marker of an emergency drop of ``dropped`` oldest messages."""
    text = (
        f"[compact] {dropped} earlier message(s) were left out of this request to fit the "
        f"model's context window"
        + (" (they are not covered by the summary)." if summary is not None else ".")
    )
    return ContextMessage(key=DROPPED_KEY, band=SUMMARY_BAND, content=text, priority=2)
