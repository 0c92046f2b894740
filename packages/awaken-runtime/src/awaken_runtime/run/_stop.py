"""Declarative stop conditions, evaluated at every StepEnd.

``AgentConfig.stop`` holds the limits; :class:`StopTracker` keeps the few
running figures they need (O(1) per tool call) and names the first condition
that fires, with its numbers. The run then ends ``Stopped(reason)``.
Plugins add conditions of their own through ``Contributions.stop_conditions``.

The figures are per run leg: after a suspend/resume the timeout, error streak
and loop window start afresh.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter, deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..agents._stop import StopConfig
    from ..messages._message import ToolCall
    from ._deps import RunDeps
    from ._leg import LegState

__all__ = ["StopTracker", "track_stops"]

_clock = time.monotonic  # module attribute so tests can substitute a clock


class StopTracker:
    """Running figures for one run leg and the check at StepEnd."""

    __slots__ = (
        "_calls",
        "_config",
        "_error_streak",
        "_pattern",
        "_started",
        "_step_text",
        "_step_tools",
    )

    def __init__(self, config: StopConfig) -> None:
        self._config = config
        self._pattern = re.compile(config.stop_on_text) if config.stop_on_text else None
        self._started = _clock()
        self._error_streak = 0
        window = config.loop_detection.window if config.loop_detection else 1
        self._calls: deque[str] = deque(maxlen=window)
        self._step_tools: list[str] = []
        self._step_text = ""

    def start_step(self) -> None:
        """Forget the previous step's tools and text."""
        self._step_tools = []
        self._step_text = ""

    def on_text(self, text: str) -> None:
        """Record the model's text of this step."""
        self._step_text = text

    def on_tool(self, call: ToolCall, is_error: bool) -> None:
        """Record one finished tool call."""
        self._step_tools.append(call.name)
        self._error_streak = self._error_streak + 1 if is_error else 0
        if self._config.loop_detection is not None:
            args = json.dumps(call.arguments, sort_keys=True, default=str)
            self._calls.append(f"{call.name}\x00{args}")

    def check(self, total_tokens: int, cost: float | None) -> str | None:
        """The reason of the first condition that fires, or ``None``."""
        c = self._config
        if c.timeout_s is not None:
            elapsed = _clock() - self._started
            if elapsed >= c.timeout_s:
                return f"timeout: ran {elapsed:.2f}s, limit {c.timeout_s:g}s"
        if c.max_total_tokens is not None and total_tokens >= c.max_total_tokens:
            return f"token budget: used {total_tokens} tokens, limit {c.max_total_tokens}"
        if c.max_cost_usd is not None and cost is not None and cost >= c.max_cost_usd:
            return f"cost budget: spent ${cost:.6f}, limit ${c.max_cost_usd:g}"
        limit = c.max_consecutive_tool_errors
        if limit is not None and self._error_streak >= limit:
            return f"consecutive tool errors: {self._error_streak} in a row, limit {limit}"
        for name in self._step_tools:
            if name in c.stop_on_tools:
                return f"stop on tool: the model called {name!r}"
        if self._pattern is not None and self._step_text:
            match = self._pattern.search(self._step_text)
            if match:
                return f"text match: {match.group(0)!r} matched /{self._pattern.pattern}/"
        return self._loop_reason()

    def _loop_reason(self) -> str | None:
        loop = self._config.loop_detection
        if loop is None or len(self._calls) < loop.repeats:
            return None
        signature, count = Counter(self._calls).most_common(1)[0]
        if count >= loop.repeats:
            name = signature.split("\x00", 1)[0]
            return (
                f"loop detected: {name!r} called {count} times with the same arguments "
                f"within the last {len(self._calls)} calls (limit {loop.repeats})"
            )
        return None


def track_stops(deps: RunDeps, leg: LegState) -> None:
    """Start this leg's stop-condition figures (none when no condition is set)."""
    config = deps.config.stop
    wanted = not config.empty or bool(deps.stop_conditions)
    leg.stop = StopTracker(config) if wanted else None
    limit = config.timeout_s
    if limit is not None:
        # The timeout also interrupts a step in flight (a long tool call, a slow
        # model): it cancels this leg's own child token, which ``finish`` reports
        # as Stopped(timeout) rather than Cancelled.
        token = leg.cancel.child()
        token.attach()
        leg.cancel = token
        leg.timeout_reason = reason = f"timeout: ran {limit:.2f}s, limit {limit:g}s"
        leg.deadline = asyncio.get_running_loop().call_later(limit, token.cancel, reason)
