"""``LegState``: what one run leg changes as it runs.

The counterpart of ``RunDeps`` (``_deps.py``): the state engine, the
transcript, the store version, the step and event counters, usage and cost,
what the current step committed, and the leg's stop and observation figures.
The step, the phase engine, inference and the tool-call executor read and
write it; what a response's tool calls produced comes back to the loop as a
``CallsOutcome`` (``_calls_outcome.py``), never through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..messages._transcript import Transcript
from ..models._model import TokenUsage
from ..state._engine import StateEngine
from ..tools._cancel import CancellationToken

if TYPE_CHECKING:
    import asyncio
    from datetime import datetime

    from ..delegation._delegation import DelegationTree
    from ..lifecycle._observer import RunObservation
    from ..messages._message import Message
    from ..plugins._actions import ScheduledAction
    from ..plugins._plugin import RunInfo
    from ..state._effects import Effect
    from ..state._engine import Command, CommittedBatch
    from ._output import OutputCheck
    from ._stop import StopTracker

__all__ = ["LegState"]

_USAGE_FIELDS = tuple(
    attrgetter(f)
    for f in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
)


class LegState:
    """The changing state of one run leg (a run, or one resumed leg of it)."""

    # __weakref__: the run's ChildRunner refers back to it weakly (no reference cycle).
    __slots__ = (
        "__weakref__",
        "answered_by",
        "applying",
        "call_ids",
        "cancel",
        "context_owners",
        "continued",
        "cost",
        "deadline",
        "decision",
        "effects",
        "engine",
        "final_text",
        "finish_reason",
        "history_call_ids",
        "new_actions",
        "observation",
        "open_step",
        "orphans",
        "output",
        "pending",
        "persisted",
        "resumed",
        "run_info",
        "seq",
        "started_at",
        "step",
        "step_delta",
        "step_usage",
        "stop",
        "stop_reason",
        "ticket",
        "timeout_reason",
        "tokens",
        "trace",
        "transcript",
        "tree",
        "uncounted",
        "version",
        "visible",
    )

    def __init__(
        self, cancel: CancellationToken | None = None, output: OutputCheck | None = None
    ) -> None:
        self.cancel = cancel or CancellationToken()
        """The leg's token (``track_stops`` swaps in a child of it when a timeout is set)."""
        self.output = output
        self.engine = StateEngine()
        self.transcript = Transcript()
        self.version = 0
        self.step = 0
        self.seq = 0
        self._init_usage()
        self._init_answer()
        self.pending: list[CommittedBatch] = []
        self.persisted: list[Message] = []
        self.effects: list[tuple[str, Effect]] = []
        self.new_actions: list[tuple[str, ScheduledAction]] = []
        self.context_owners: dict[str, str] = {}
        """Context key -> the plugin that created it (see ``check_bound``)."""
        self.stop: StopTracker | None = None
        self.stop_reason: str | None = None
        self.deadline: asyncio.TimerHandle | None = None
        """The pending timeout of this leg (``_stop.track_stops``)."""
        self.timeout_reason: str | None = None
        self._init_resume()
        self.call_ids: set[str] | None = None
        self.history_call_ids: frozenset[str] | None = None
        """Tool-call ids in the transcript (built on the leg's first call), kept unique."""
        self.tree: DelegationTree | None = None
        self.started_at: datetime | None = None
        self.observation: RunObservation | None = None
        """This leg as the observer sees it (``None``: no observer, nothing is reported)."""
        self.trace: Mapping[str, str] = {}
        """Stored with each ticket this leg parks (``RunObservation.trace``)."""
        self.run_info: RunInfo | None = None
        """The run's identity as this step's hooks see it (``PhaseEngine.info``)."""

    # __init__ in parts, by topic:
    def _init_usage(self) -> None:
        self.tokens = [0, 0, 0, 0]  # prompt, completion, cached, reasoning
        self.uncounted: list[TokenUsage] = []  # folded into tokens when read
        self.cost: float | None = None

    def _init_answer(self) -> None:
        self.step_usage = TokenUsage()
        self.step_delta: list[Command] = []
        self.visible: set[str] | None = None
        """The tool ids this step's request showed (``None``: all of them)."""
        self.finish_reason: str | None = None
        self.answered_by: str | None = None
        self.final_text = ""
        self.continued = ""
        """Text of earlier truncated answers a ``truncation='continue'`` answer joins."""

    def _init_resume(self) -> None:
        self.open_step = False
        self.resumed = False
        self.decision: Any = None
        self.ticket: Any = None
        self.applying: str | None = None
        self.orphans: frozenset[str] = frozenset()
        """Calls of the parked step an earlier resume claimed but never answered."""

    def next_seq(self) -> int:
        """The next event sequence number of this run."""
        self.seq += 1
        return self.seq

    # -- usage ---------------------------------------------------------------

    @property
    def usage(self) -> TokenUsage:
        """Tokens used by this run so far."""
        p, c, cached, reasoning = self.totals()
        return TokenUsage(
            prompt_tokens=p, completion_tokens=c, cached_tokens=cached, reasoning_tokens=reasoning
        )

    @usage.setter
    def usage(self, value: TokenUsage) -> None:
        self.uncounted = []
        self.tokens = [
            value.prompt_tokens,
            value.completion_tokens,
            value.cached_tokens,
            value.reasoning_tokens,
        ]

    def totals(self) -> list[int]:
        """Prompt, completion, cached and reasoning tokens so far.

        Steps only append their usage (one list append on the step path); the
        sums are folded in here, when something reads them.
        """
        uncounted = self.uncounted
        if uncounted:
            self.tokens = [
                total + sum(map(field, uncounted))
                for total, field in zip(self.tokens, _USAGE_FIELDS, strict=True)
            ]
            self.uncounted = []
        return self.tokens

    def add_usage(self, usage: TokenUsage, cost: float | None) -> None:
        """Add usage (e.g. a sub-agent's) to this run's and this step's totals."""
        self.uncounted.append(usage)
        self.step_usage = self.step_usage + usage
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
