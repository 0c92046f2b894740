"""The BEFORE_INFERENCE hook: count, trigger, cut, summarize, shape the request.

Each step the hook plans the request as ``summary + bridge + tail``: the
summary (THREAD state) as a session-band context message, then every message
after the summary's boundary. When that plan reaches the trigger, the span
between the boundary and the raw tail is folded into the summary by the
compactor. The cut prefers to keep the current user turn raw; when that turn
alone is too big (a long tool-using run) it goes into the turn, folding its
completed tool steps into the summary, and the newest user message is then
pinned into every request as its own entry. If the plan still exceeds the
usable input (for example because the compactor failed or is backing off),
the oldest safe prefix is dropped for that request only, with a context
marker saying so. The transcript is never touched.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from awaken_runtime import (
    CONTEXT_MESSAGES,
    Command,
    ContextMessage,
    HookReaction,
    InferenceRequest,
    Message,
    PhaseContext,
    Scope,
    inject,
)

from ._compactor import CompactorError, summarize
from ._config import CompactConfig
from ._counter import REPLY_PRIMING, TokenCounter
from ._cut import choose_cut, safe_at_or_after, safe_at_or_before
from ._encodings import counting_encoding, encoding_for_model
from ._index import ThreadIndexes, ThreadTokens
from ._persist import checkpoint, read_checkpoint, restore
from ._plan import (
    drop_marker,
    pinned_entry,
    summary_entry,
    tool_result_cap,
    usable_input,
    window_start,
)
from ._state import BACKOFF, STATS, SUMMARY, CompactBackoff, Summary, next_backoff
from ._window import (
    REQUEST_WINDOW,
    core_supports_replacements,
    core_supports_request_window,
    window_clear,
    window_command,
)

__all__ = ["Caches", "CompactHook"]

log = logging.getLogger("awaken_ext_compact")

_MARKER_RESERVE = 160
"""Tokens reserved for the drop marker when choosing how much to drop."""


@dataclass
class Caches:
    """Counters per encoding, token indexes per thread and the compactor back-off
    of this process, shared by every agent of one plugin object."""

    counters: dict[str, TokenCounter] = field(default_factory=dict)
    indexes: ThreadIndexes = field(default_factory=ThreadIndexes)
    clock: Callable[[], float] = time.time
    """Wall-clock seconds (back-off times are stored in thread state as Unix time)."""
    dead_until: dict[str, float] = field(default_factory=dict)
    """Per compactor (agent id, or the model for the built-in one): no call before this
    time, whatever the thread (a compactor that is down is down for every thread)."""

    async def counter(self, config: CompactConfig, model: str) -> TokenCounter:
        """The counter for ``config.encoding`` or the model's encoding.

        The first use of an encoding loads it (tiktoken is imported then) on a
        worker thread, so the event loop is not blocked while its file is
        parsed. Without the encoding the counter estimates (warned once).
        """
        name = config.encoding or encoding_for_model(model)
        found = self.counters.get(name)
        if found is None:
            encoding = await asyncio.to_thread(
                counting_encoding,
                name,
                cache_dir=config.tiktoken_cache_dir,
                allow_download=config.allow_download,
            )
            found = self.counters.setdefault(name, TokenCounter(encoding))
        return found


class CompactHook:
    """The plugin's BEFORE_INFERENCE hook for one agent's config."""

    def __init__(self, plugin_id: str, config: CompactConfig, caches: Caches) -> None:
        self.plugin_id = plugin_id
        self.config = config
        self.caches = caches
        self._pin: tuple[tuple[str, str, int | None], ContextMessage, int] | None = None

    def _pinned(
        self, message: Message, counter: TokenCounter, limit: int | None
    ) -> tuple[ContextMessage, int]:
        """The pin entry of ``message`` and its tokens (one slot: the user message changes
        once per turn, and cutting it is O(its size))."""
        key = (message.id, counter.name, limit)
        if self._pin is None or self._pin[0] != key:
            entry = pinned_entry(message, counter, limit)
            self._pin = (key, entry, counter.context([entry]))
        return self._pin[1], self._pin[2]

    def _could_trigger(self, request: InferenceRequest, limit: int | None) -> bool:
        """Whether counting could lead anywhere (else the tokenizer is not even loaded)."""
        carried = sum(1 for m in request.messages if m.role != "system")
        if carried <= 1:  # nothing older than the one message to fold or drop
            return False
        if limit is None and self.config.max_tool_result_tokens is None:
            return carried > self.config.trigger_messages
        return True

    def _triggered(self, tokens: int, limit: int | None, carried: int) -> bool:
        if limit is not None:
            return tokens >= self.config.trigger_ratio * limit
        return carried > self.config.trigger_messages

    def _compactor_id(self, request: InferenceRequest) -> str:
        return self.config.compactor_agent or f"model:{request.model.id}"

    def _may_try(self, backoff: CompactBackoff | None, who: str, now: float) -> bool:
        if backoff is not None and now < backoff.next_attempt_at:
            return False
        return now >= self.caches.dead_until.get(who, 0.0)

    def _choose(
        self, index: ThreadTokens, ctx: PhaseContext, start: int, fixed: int, limit: int | None
    ) -> int | None:
        """Where the raw tail starts: after the newest user message if the turn fits
        comfortably, else inside the turn (at least ``keep_recent_messages`` kept)."""
        cfg = self.config
        messages = ctx.messages
        n = len(messages)
        turn = choose_cut(messages, start, index.last_user, cfg.keep_recent_messages)
        if turn is not None:
            if limit is None:
                fits = 2 * (n - turn) <= cfg.trigger_messages
            else:
                after = fixed + cfg.summary_max_tokens + index.tokens(turn, n)
                fits = after <= 0.5 * cfg.trigger_ratio * limit
            if fits:
                return turn
        deep = choose_cut(messages, start, -1, cfg.keep_recent_messages)
        return deep if deep is not None else turn

    async def __call__(self, ctx: PhaseContext) -> HookReaction | None:
        """Plan the request, compact if triggered, and stage context + window + state."""
        request = ctx.request
        if request is None:
            return None
        cfg = self.config
        summary = SUMMARY.get(ctx.store)
        limit = usable_input(request, cfg)
        if summary is None and not self._could_trigger(request, limit):
            return None
        counter = await self.caches.counter(cfg, request.model.model)
        cap = tool_result_cap(cfg, limit) if core_supports_replacements() else None
        messages = ctx.messages
        n = len(messages)
        policy_start, system = window_start(request.messages, messages)
        index = self.caches.indexes.get(ctx.run.thread_id, counter, cap)
        found = read_checkpoint(ctx.store)
        restore(index, found, messages)  # a new index: the counts a previous process left
        need = policy_start
        covered = summary.covered_count if summary is not None else 0
        if 0 < covered <= n and messages[covered - 1].id == summary.covered_through:  # type: ignore[union-attr]
            need = max(need, covered)  # what the summary covers is never counted
        index.sync(messages, need)
        fixed = REPLY_PRIMING + counter.tools(request.tools)
        fixed += counter.raw_context(ctx.store.get_value(CONTEXT_MESSAGES, Scope.RUN))
        if system is not None:
            fixed += counter.message(system)
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
        backoff = old_backoff = BACKOFF.get(ctx.store)
        user = index.last_user
        pin, pin_tokens = self._pinned(messages[user], counter, limit) if user >= 0 else (None, 0)
        new_summary = False

        def planned(first: int) -> int:
            head = counter.context([summary_entry(summary)]) if summary is not None else 0
            pinned = pin_tokens if 0 <= user < first else 0
            return fixed + head + pinned + index.tokens(first, n)

        tokens = planned(start)
        now = self.caches.clock()
        who = self._compactor_id(request)
        if (
            self._triggered(tokens, limit, n - start)
            and stats.failures < cfg.max_failures_per_run
            and self._may_try(backoff, who, now)
        ):
            cut = self._choose(index, ctx, start, fixed, limit)
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
                    done = backoff.failures if backoff is not None else 0
                    backoff = next_backoff(
                        done, str(exc), now, cfg.failure_backoff_seconds, cfg.max_backoff_seconds
                    )
                    self.caches.dead_until[who] = backoff.next_attempt_at
                else:
                    summary = Summary(
                        text=result.text,
                        covered_through=messages[cut - 1].id,
                        covered_count=cut,
                        compactions=summary.compactions + 1 if summary is not None else 1,
                        tokens=counter.text(result.text),
                    )
                    stats = stats.model_copy(
                        update={
                            "compactions": stats.compactions + 1,
                            "compactor_calls": stats.compactor_calls + result.calls,
                            "summarized_messages": stats.summarized_messages + cut - start,
                        }
                    )
                    new_summary = True
                    backoff = None
                    self.caches.dead_until.pop(who, None)
                    start = cut
                    tokens = planned(start)
        kept_from = start
        marker: ContextMessage | None = None
        if limit is not None and tokens > limit:
            head = counter.context([summary_entry(summary)]) if summary is not None else 0
            budget = limit - fixed - head - pin_tokens - _MARKER_RESERVE
            drop_to = safe_at_or_after(messages, index.first_start_within(start, n, budget))
            drop_to = min(drop_to, safe_at_or_before(messages, n - 1, start))
            if drop_to > start:
                marker = drop_marker(drop_to - start, summary)
                log.warning(
                    "compact: request of run %s still exceeds the window (%d > %d tokens); "
                    "leaving out %d oldest message(s) for this request",
                    ctx.run.run_id,
                    tokens,
                    limit,
                    drop_to - start,
                )
                start = drop_to
                tokens = planned(start) + counter.context([marker])
                stats = stats.model_copy(update={"emergency_drops": stats.emergency_drops + 1})
        commands: list[Command] = []
        if new_summary:
            commands.append(SUMMARY.set(summary))
        if backoff != old_backoff:
            commands.append(BACKOFF.set(backoff))
        entries = [summary_entry(summary)] if summary is not None else []
        if pin is not None and 0 <= user < start:
            entries.append(pin)
        if marker is not None:
            entries.append(marker)
        if entries:
            commands.append(inject(*entries))
        texts = index.replacements(start, n, messages) if cap is not None else {}
        if start > policy_start or texts:
            commands.append(
                window_command(
                    start_after=messages[start - 1].id if start > 0 else None,
                    replace_content=texts,
                )
            )
        elif not core_supports_request_window() and (Scope.RUN, REQUEST_WINDOW) in ctx.store:
            commands.append(window_clear())
        if index.last_cut:
            count = stats.truncated_tool_results + index.last_cut
            stats = stats.model_copy(update={"truncated_tool_results": count})
        if stats != before:
            commands.append(STATS.set(stats.model_copy(update={"last_request_tokens": tokens})))
        # Written with the other thread state (a new summary or back-off), else every few steps.
        counts = checkpoint(
            index, kept_from, messages, found, force=new_summary or backoff != old_backoff
        )
        if counts is not None:
            commands.append(counts)
        return HookReaction(commands=commands) if commands else None
