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

Counting is incremental (the thread's index only ingests new messages) and
lazy: until a byte-count upper bound of the plan reaches the trigger, the
thread is not tokenized at all (``_bound``), so a step costs O(new
messages) whatever the thread's length, and a fresh thread costs a ``len``
per message rather than a tokenizer pass.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from awaken_runtime import (
    CONTEXT_MESSAGES,
    STANDING_CONTEXT,
    Command,
    ContextMessage,
    HookReaction,
    InferenceRequest,
    Message,
    PhaseContext,
    Scope,
    ToolDescriptor,
    inject,
    request_context,
)

from ._bound import BoundTokens
from ._caches import Caches
from ._compactor import CompactorError, summarize
from ._config import CompactConfig
from ._counter import REPLY_PRIMING, TokenCounter
from ._cut import choose_cut, safe_at_or_after, safe_at_or_before
from ._index import ThreadTokens, TokenSums
from ._persist import checkpoint, read_checkpoint
from ._plan import (
    drop_marker,
    pinned_entry,
    summary_entry,
    tool_result_cap,
    usable_input,
    window_start,
)
from ._state import (
    BACKOFF,
    COUNTS,
    STATS,
    SUMMARY,
    CompactBackoff,
    CompactStats,
    StateReader,
    Summary,
    next_backoff,
)
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


class CompactHook:
    """The plugin's BEFORE_INFERENCE hook for one agent's config."""

    def __init__(self, plugin_id: str, config: CompactConfig, caches: Caches) -> None:
        self.plugin_id = plugin_id
        self.config = config
        self.caches = caches
        self._pin: tuple[tuple[str, str, int | None], ContextMessage, int] | None = None
        self._entry: tuple[str, ContextMessage] | None = None
        self._summary = StateReader(SUMMARY)
        self._stats = StateReader(STATS)
        self._backoff = StateReader(BACKOFF)
        self._counts = StateReader(COUNTS)
        # What the installed core honours does not change while the process runs.
        self._replaces = core_supports_replacements()
        self._windows = core_supports_request_window()
        # The staged context and system prompt of the last plan, and their tokens.
        self._fixed: tuple[tuple[TokenCounter, object, object, object], int] | None = None

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

    def _fixed_tokens(
        self,
        counter: TokenCounter,
        tools: Sequence[ToolDescriptor],
        standing: dict[str, Any] | None,
        staged: dict[str, Any] | None,
        system: Message | None,
    ) -> int:
        """Tokens of what every plan carries besides messages: reply priming, the tool
        schemas, the staged context entries and the system prompt.

        The entries and the system prompt count as they did last step when they are
        the same objects, or equal ones (committed values are replaced, never mutated,
        and messages are frozen), so the entries are not validated again every step;
        the tool list is the counter's to check (it may be one list changed in place).
        """
        fixed = REPLY_PRIMING + counter.tools(tools)
        key = (counter, standing, staged, system)
        memo = self._fixed
        if memo is not None and memo[0] == key:  # identical items: compared by identity alone
            return fixed + memo[1]
        extra = counter.raw_context(request_context(standing, staged))
        if system is not None:
            extra += counter.message(system)
        self._fixed = (key, extra)
        return fixed + extra

    def _summary_entry(self, summary: Summary) -> ContextMessage:
        """The summary's context entry (one slot: it changes once per compaction)."""
        if self._entry is None or self._entry[0] != summary.text:
            self._entry = (summary.text, summary_entry(summary))
        return self._entry[1]

    def _could_trigger(self, request: InferenceRequest, limit: int | None) -> bool:
        """Whether counting could lead anywhere (else the tokenizer is not even loaded):
        the request carries more than one non-system message (nothing older than the
        one message to fold or drop otherwise), or more than ``trigger_messages``
        without a window or cap. Counting stops there: O(1), not O(thread)."""
        if limit is None and self.config.max_tool_result_tokens is None:
            want = self.config.trigger_messages + 1
        else:
            want = 2
        messages = request.messages
        if len(messages) < want:
            return False
        for message in messages:
            if message.role != "system":
                want -= 1
                if not want:
                    return True
        return False

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
        self, index: TokenSums, ctx: PhaseContext, start: int, fixed: int, limit: int | None
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

    async def _fold(
        self,
        ctx: PhaseContext,
        counter: TokenCounter,
        summary: Summary | None,
        stats: CompactStats,
        backoff: CompactBackoff | None,
        span: tuple[int, int],
        attempt: tuple[float, str],
    ) -> tuple[Summary | None, CompactStats, CompactBackoff | None, bool]:
        """Fold messages ``[start, cut)`` (``span``) into the summary, at time ``now`` with
        compactor ``who`` (``attempt``); the summary, stats and back-off after it, and
        whether it succeeded."""
        cfg, messages = self.config, ctx.messages
        (start, cut), (now, who) = span, attempt
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
            return summary, stats, backoff, False
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
        self.caches.dead_until.pop(who, None)
        return summary, stats, None, True

    async def __call__(self, ctx: PhaseContext) -> HookReaction | None:
        """Plan the request, compact if triggered, and stage context + window + state."""
        request = ctx.request
        if request is None:
            return None
        cfg = self.config
        store = ctx.store
        summary = self._summary.read(store)
        limit = usable_input(request, cfg)
        if summary is None and not self._could_trigger(request, limit):
            return None
        model = request.model.model
        counter = self.caches.loaded(cfg, model) or await self.caches.counter(cfg, model)
        cap = tool_result_cap(cfg, limit) if self._replaces else None
        messages = ctx.messages
        n = len(messages)
        policy_start, system = window_start(request.messages, messages)
        found = read_checkpoint(store, self._counts)
        need = policy_start
        covered = summary.covered_count if summary is not None else 0
        if 0 < covered <= n and messages[covered - 1].id == summary.covered_through:  # type: ignore[union-attr]
            need = max(need, covered)  # what the summary covers is never counted
        thread_id = ctx.run.thread_id
        index = self.caches.index(thread_id, counter, cap, found, messages, need)
        fixed = self._fixed_tokens(
            counter,
            request.tools,
            store.get_value(STANDING_CONTEXT, Scope.RUN),
            store.get_value(CONTEXT_MESSAGES, Scope.RUN),
            system,
        )
        start = policy_start
        if summary is not None:
            boundary = index.index_of(summary.covered_through, summary.covered_count - 1)
            if boundary is None:
                log.warning(
                    "compact: summary boundary %s is not in thread %s; ignoring the summary",
                    summary.covered_through,
                    thread_id,
                )
                summary = None
            else:
                start = max(start, boundary + 1)
        stats = before = self._stats.read(store)
        backoff = old_backoff = self._backoff.read(store)
        user = index.last_user
        new_summary = False

        def pin() -> tuple[ContextMessage, int]:
            return self._pinned(messages[user], counter, limit)

        def planned(first: int) -> int:
            head = counter.context([self._summary_entry(summary)]) if summary is not None else 0
            pinned = pin()[1] if 0 <= user < first else 0
            return fixed + head + pinned + index.tokens(first, n)

        tokens = planned(start)
        if isinstance(index, BoundTokens) and (
            self._triggered(tokens, limit, n - start) or index.suspects(start, n)
        ):
            # The bound reached the trigger (or a tool result may need a cut): count.
            index = self.caches.counted(thread_id, counter, cap, found, messages, need)
            tokens = planned(start)
        if self._triggered(tokens, limit, n - start) and stats.failures < cfg.max_failures_per_run:
            now, who = self.caches.clock(), self._compactor_id(request)
            cut = (
                self._choose(index, ctx, start, fixed, limit)
                if self._may_try(backoff, who, now)
                else None
            )
            if cut is not None and index.tokens(start, cut) < cfg.min_gain_tokens:
                stats = stats.model_copy(update={"skipped_min_gain": stats.skipped_min_gain + 1})
            elif cut is not None:
                summary, stats, backoff, new_summary = await self._fold(
                    ctx, counter, summary, stats, backoff, (start, cut), (now, who)
                )
                if new_summary:
                    start = cut
                    tokens = planned(start)
        kept_from = start
        marker: ContextMessage | None = None
        if limit is not None and tokens > limit:
            head = counter.context([self._summary_entry(summary)]) if summary is not None else 0
            pin_tokens = pin()[1] if user >= 0 else 0
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
        entries = [self._summary_entry(summary)] if summary is not None else []
        if 0 <= user < start:
            entries.append(pin()[0])
        if marker is not None:
            entries.append(marker)
        if entries:
            commands.append(inject(*entries))
        # A bound index has no cuts to replace: a suspect in the span made it count.
        if cap is not None and isinstance(index, ThreadTokens):
            texts = index.replacements(start, n, messages)
        else:
            texts = {}
        if start > policy_start or texts:
            commands.append(
                window_command(
                    start_after=messages[start - 1].id if start > 0 else None,
                    replace_content=texts,
                )
            )
        elif not self._windows and (Scope.RUN, REQUEST_WINDOW) in store:
            commands.append(window_clear())
        if index.last_cut:
            count = stats.truncated_tool_results + index.last_cut
            stats = stats.model_copy(update={"truncated_tool_results": count})
        if stats is not before:  # every change is a model_copy
            commands.append(STATS.set(stats.model_copy(update={"last_request_tokens": tokens})))
        # Written with the other thread state (a new summary or back-off), else every few steps.
        counts = checkpoint(
            index, kept_from, messages, found, force=new_summary or backoff != old_backoff
        )
        if counts is not None:
            commands.append(counts)
        return HookReaction(commands=commands) if commands else None
