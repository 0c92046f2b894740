"""The BEFORE_INFERENCE hook: count, trigger, cut, summarize, shape the request.

Each step the hook plans the request as ``summary + bridge + tail``: the
summary (THREAD state) as a session-band context message, then every message
after the summary's boundary. When that plan reaches the trigger, the span
between the boundary and the raw tail is folded into the summary by the
compactor. If the plan still exceeds the usable input (for example because
the compactor failed), the oldest safe prefix is dropped for that request
only, with a context marker saying so. The transcript is never touched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from awaken_runtime import (
    CONTEXT_MESSAGES,
    Band,
    Command,
    ContextMessage,
    HookReaction,
    InferenceRequest,
    Message,
    MessageView,
    PhaseContext,
    Scope,
    inject,
)

from ._compactor import CompactorError, summarize
from ._config import CompactConfig
from ._counter import REPLY_PRIMING, TokenCounter
from ._cut import choose_cut, safe_at_or_after, safe_at_or_before
from ._encodings import encoding_for_model, load_encoding
from ._index import ThreadIndexes, ThreadTokens
from ._state import STATS, SUMMARY, Summary
from ._window import (
    REQUEST_WINDOW,
    core_supports_replacements,
    core_supports_request_window,
    window_clear,
    window_command,
)

__all__ = ["DROPPED_KEY", "SUMMARY_BAND", "SUMMARY_KEY", "Caches", "CompactHook", "usable_input"]

log = logging.getLogger("awaken_ext_compact")

SUMMARY_BAND = Band.SESSION
"""The band the summary and markers are injected into (right after the system prompt)."""
SUMMARY_KEY = "compact.summary"
"""Context-message key of the summary."""
DROPPED_KEY = "compact.dropped"
"""Context-message key of the marker for an emergency drop."""
_MARKER_RESERVE = 160
"""Tokens reserved for the drop marker when choosing how much to drop."""


@dataclass
class Caches:
    """Counters per encoding and token indexes per thread, shared by every agent."""

    counters: dict[str, TokenCounter] = field(default_factory=dict)
    indexes: ThreadIndexes = field(default_factory=ThreadIndexes)

    async def counter(self, config: CompactConfig, model: str) -> TokenCounter:
        """The counter for ``config.encoding`` or the model's encoding.

        The first use of an encoding loads it (tiktoken is imported then) on a
        worker thread, so the event loop is not blocked while its file is parsed.
        """
        name = config.encoding or encoding_for_model(model)
        found = self.counters.get(name)
        if found is None:
            encoding = await asyncio.to_thread(
                load_encoding,
                name,
                cache_dir=config.tiktoken_cache_dir,
                allow_download=config.allow_download,
            )
            found = self.counters.setdefault(name, TokenCounter(encoding))
        return found


def usable_input(request: InferenceRequest, config: CompactConfig) -> int | None:
    """Context window minus max output tokens, or ``None`` when the window is unknown."""
    window = config.context_window or request.model.context_window
    if window is None:
        return None
    out = request.params.max_output_tokens or request.model.max_output_tokens or 0
    return max(1, window - out)


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


def _marker(dropped: int, summary: Summary | None, lost_user: str | None) -> ContextMessage:
    text = (
        f"[compact] {dropped} earlier message(s) were left out of this request to fit the "
        f"model's context window"
        + (" (they are not covered by the summary)." if summary is not None else ".")
    )
    if lost_user is not None:
        text += f"\nThe user's latest request was: {lost_user}"
    return ContextMessage(key=DROPPED_KEY, band=SUMMARY_BAND, content=text, priority=1)


class CompactHook:
    """The plugin's BEFORE_INFERENCE hook for one agent's config."""

    def __init__(self, plugin_id: str, config: CompactConfig, caches: Caches) -> None:
        self.plugin_id = plugin_id
        self.config = config
        self.caches = caches

    def _replacements(
        self, index: ThreadTokens, messages: MessageView, start: int, fresh: list[int]
    ) -> tuple[int, dict[str, str]]:
        """Tokens saved and texts of the tool results cut for a request from ``start``."""
        limit = self.config.max_tool_result_tokens
        if limit is None:
            return 0, {}
        applied = core_supports_replacements()
        saved, texts = 0, {}
        counter = index.counter
        for i in index.big_in(start, len(messages)):
            found = index.replacement(i)
            if found is None:
                message = messages[i]
                head, full = counter.truncate(message.text, limit)
                text = f"{head}\n[compact: tool result cut to {limit} of {full} tokens]"
                short = message.model_copy(update={"content": text})
                found = (counter.message(message) - counter.count_message(short), text)
                index.set_replacement(i, *found)
                fresh.append(i)
            if applied:
                saved += found[0]
            texts[messages[i].id] = found[1]
        return saved, texts

    def _triggered(self, tokens: int, limit: int | None, carried: int) -> bool:
        if limit is not None:
            return tokens >= self.config.trigger_ratio * limit
        return carried > self.config.trigger_messages

    async def __call__(self, ctx: PhaseContext) -> HookReaction | None:
        """Plan the request, compact if triggered, and stage context + window + state."""
        request = ctx.request
        if request is None:
            return None
        cfg = self.config
        counter = await self.caches.counter(cfg, request.model.model)
        messages = ctx.messages
        index = self.caches.indexes.get(ctx.run.thread_id, counter, cfg.max_tool_result_tokens)
        index.sync(messages)
        n = len(messages)
        policy_start, system = window_start(request.messages, messages)
        fixed = REPLY_PRIMING + counter.tools(request.tools)
        fixed += counter.raw_context(ctx.store.get_value(CONTEXT_MESSAGES, Scope.RUN))
        if system is not None:
            fixed += counter.message(system)
        summary = SUMMARY.get(ctx.store)
        start = policy_start
        if summary is not None:
            boundary = index.index_of(summary.covered_through, summary.covered_count - 1)
            if boundary is None:
                log.warning(
                    "compact: summary boundary %s is not in thread %s; ignoring the summary",
                    summary.covered_through,
                    ctx.run.thread_id,
                )
                summary = None
            else:
                start = max(start, boundary + 1)
        stats = before = STATS.get(ctx.store)
        limit = usable_input(request, cfg)
        new_summary = False
        fresh: list[int] = []

        def planned(first: int) -> tuple[int, dict[str, str]]:
            saved, texts = self._replacements(index, messages, first, fresh)
            head = counter.context([summary_entry(summary)]) if summary is not None else 0
            return fixed + head + index.tokens(first, n) - saved, texts

        tokens, texts = planned(start)
        if self._triggered(tokens, limit, n - start) and stats.failures < cfg.max_failures_per_run:
            cut = choose_cut(messages, start, index.last_user, cfg.keep_recent_messages)
            if cut is not None and index.tokens(start, cut) < cfg.min_gain_tokens:
                stats = stats.model_copy(update={"skipped_min_gain": stats.skipped_min_gain + 1})
            elif cut is not None:
                previous = summary.text if summary is not None else None
                try:
                    result = await summarize(ctx, cfg, counter, previous, messages[start:cut])
                except CompactorError as exc:
                    log.warning("compact: compactor failed in run %s: %s", ctx.run.run_id, exc)
                    stats = stats.model_copy(
                        update={"failures": stats.failures + 1, "last_failure": str(exc)}
                    )
                else:
                    summary = Summary(
                        text=result.text,
                        covered_through=messages[cut - 1].id,
                        covered_count=cut,
                        compactions=summary.compactions + 1 if summary is not None else 1,
                        tokens=counter.text(result.text),
                    )
                    new_summary = True
                    stats = stats.model_copy(
                        update={
                            "compactions": stats.compactions + 1,
                            "compactor_calls": stats.compactor_calls + result.calls,
                            "summarized_messages": stats.summarized_messages + cut - start,
                        }
                    )
                    start = cut
                    tokens, texts = planned(start)
        marker: ContextMessage | None = None
        if limit is not None and tokens > limit:
            head = counter.context([summary_entry(summary)]) if summary is not None else 0
            budget = limit - fixed - head - _MARKER_RESERVE
            drop_to = safe_at_or_after(messages, index.first_start_within(start, n, budget))
            drop_to = min(drop_to, safe_at_or_before(messages, n - 1, start))
            if drop_to > start:
                lost = index.last_user
                lost_text = None
                if 0 <= lost < drop_to and lost >= start:
                    lost_text, _ = counter.truncate(messages[lost].text, 500)
                marker = _marker(drop_to - start, summary, lost_text)
                log.warning(
                    "compact: request of run %s still exceeds the window (%d > %d tokens); "
                    "leaving out %d oldest message(s) for this request",
                    ctx.run.run_id,
                    tokens,
                    limit,
                    drop_to - start,
                )
                start = drop_to
                tokens, texts = planned(start)
                tokens += counter.context([marker])
                stats = stats.model_copy(update={"emergency_drops": stats.emergency_drops + 1})
        commands: list[Command] = []
        if new_summary:
            commands.append(SUMMARY.set(summary))
        entries = [summary_entry(summary)] if summary is not None else []
        if marker is not None:
            entries.append(marker)
        if entries:
            commands.append(inject(*entries))
        if start > policy_start or texts:
            commands.append(
                window_command(
                    start_after=messages[start - 1].id if start > 0 else None,
                    replace_content=texts,
                )
            )
        elif not core_supports_request_window() and (Scope.RUN, REQUEST_WINDOW) in ctx.store:
            commands.append(window_clear())
        if fresh:
            count = stats.truncated_tool_results + len(fresh)
            stats = stats.model_copy(update={"truncated_tool_results": count})
        if stats != before:
            commands.append(STATS.set(stats.model_copy(update={"last_request_tokens": tokens})))
        return HookReaction(commands=commands) if commands else None
