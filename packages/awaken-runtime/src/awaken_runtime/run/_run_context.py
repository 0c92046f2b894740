"""``RunContext``: everything one run (or one resumed leg of a run) shares among its parts.

The run is a few collaborating objects (see ``run/AGENTS.md``): the phase
engine (``PhaseEngine``), inference (``Inference``), the tool-call executor
(``ToolCallExecutor``), the step loop (``AgentLoop``) and parking/resuming
(``Legs``). They hold no run state of their own; what changes during a run
lives here, in one explicit object, so each part can be built and tested with
a context alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .._errors import AgentConfigError
from ..messages._transcript import Transcript
from ..models._model import TokenUsage
from ..plugins._plugin import PhaseContext, PhaseHookPoint, RunInfo
from ..state._engine import CommittedBatch, StateEngine
from ..tools._cancel import CancellationToken
from ._output import OutputCheck
from ._request import RequestAssembler

if TYPE_CHECKING:
    from ..agents._resolve import ResolvedAgent
    from ..delegation._delegation import DelegationTree
    from ..delegation._service import ChildRunner
    from ..lifecycle._events import AgentEvent
    from ..lifecycle._observer import RunObservation, RunObserver
    from ..messages._message import Message, ToolCall
    from ..models._model import InferenceRequest, InferenceResponse
    from ..plugins._actions import ScheduledAction
    from ..plugins._await import AwaitReason
    from ..state._effects import Effect
    from ..state._engine import Command
    from ..stores._lease import LeaseGuard
    from ..stores._thread_store import ScopeBinding, ThreadStore
    from ..suspension._suspension import ResumeTicket
    from ..tools._tool import Tool, ToolOutput
    from ._dispatch import Producer
    from ._stop import StopTracker

__all__ = ["Emit", "Parked", "RunContext"]

Emit = Callable[["AgentEvent"], None]

_USAGE_FIELDS = tuple(
    attrgetter(f)
    for f in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")
)


class Parked:
    """A call waiting for a decision, before it becomes a ticket."""

    # A plain class, not a dataclass: generating a dataclass's methods at import costs
    # more than a short run itself (see tests/runtime/test_working_import.py).
    __slots__ = ("call", "deadline", "not_before", "payload", "reason")

    def __init__(
        self,
        call: ToolCall,
        reason: AwaitReason,
        payload: dict[str, Any],
        deadline: datetime | None = None,
        not_before: datetime | None = None,
    ) -> None:
        self.call = call
        self.reason = reason
        self.payload = payload
        self.deadline = deadline
        self.not_before = not_before


class RunContext:
    """The state of one run leg, read and written by the run's parts.

    Fixed for the leg: ``agent`` (the resolved agent), ``store``, ``binding``,
    ``run_id``, ``cancel``, ``emit`` and what the step path reads of the
    (pydantic) snapshot and config, as plain attributes (an attribute read on a
    pydantic model is several times slower). Changing: the state engine, the
    transcript, the store version, the step, usage and cost, and what the
    current step has staged, parked or held back.
    """

    def __init__(
        self,
        agent: ResolvedAgent,
        store: ThreadStore,
        binding: ScopeBinding,
        run_id: str,
        *,
        cancel: CancellationToken | None = None,
        emit: Emit | None = None,
    ) -> None:
        self.agent = agent
        self.config = config = agent.snapshot.config
        self.model = agent.snapshot.model
        self.policy = config.context_policy
        self.params = config.params
        self.max_steps = config.max_steps
        self.hooks = agent.hooks
        self.store = store
        self.binding = binding
        self.run_id = run_id
        self.cancel = cancel or CancellationToken()
        self.emit = emit
        self.parent_run_id: str | None = None
        self.lineage: tuple[str, ...] = ()
        """Agent ids from the root run down to this run's parent (for delegation limits)."""
        self.tree: DelegationTree | None = None
        self.ticket_secret: bytes | None = None
        self.children: ChildRunner | None = None
        self.cancel_child: Callable[[dict[str, Any]], Awaitable[object]] | None = None
        """Cancels the waiting child of a DELEGATION ticket payload (set by the runtime)."""
        self.delegation_tool_id = "agent_run"
        self.parallel_limit = 1
        """How many delegation calls of one response may run at once (1: sequential)."""
        self.tools: dict[str, Tool] = dict(agent.tools)
        self.tool_owner: dict[str, str] = dict(agent.tool_owner)
        self.descriptors = [t.descriptor for t in self.tools.values()]
        self.visible: set[str] | None = None
        self.assembler = RequestAssembler(config.instructions)
        output = config.output
        self.output_spec = output
        self.output = OutputCheck(output) if output is not None else None
        self.finish_reason: str | None = None
        self.answered_by: str | None = None
        self.continued = ""
        """Text of earlier truncated answers a ``truncation='continue'`` answer joins."""
        # -- changing during the leg
        self.engine = StateEngine()
        self.transcript = Transcript()
        self.version = 0
        self.step = 0
        self.seq = 0
        self.tokens = [0, 0, 0, 0]  # prompt, completion, cached, reasoning
        self.uncounted: list[TokenUsage] = []  # folded into tokens when read
        self.cost: float | None = None
        self.step_usage = TokenUsage()
        self.step_delta: list[Command] = []
        self.pending: list[CommittedBatch] = []
        self.persisted: list[Message] = []
        self.final_text = ""
        self.stop_reason: str | None = None
        self.stop: StopTracker | None = None
        self.effects: list[tuple[str, Effect]] = []
        self.new_actions: list[tuple[str, ScheduledAction]] = []
        self.context_owners: dict[str, str] = {}
        self.deadline: asyncio.TimerHandle | None = None
        """The pending timeout of this leg (``_stop.track_stops``)."""
        self.timeout_reason: str | None = None
        """Context key -> the plugin that created it (see ``check_bound``)."""
        self.parked: list[Parked] = []
        self.held: list[Message] = []
        """AFTER_TOOL hook messages, appended once the step's tool results are in."""
        self.kept_tickets: list[ResumeTicket] = []
        self.gate_owner: str | None = None
        self.decision: Any = None
        self.ticket: Any = None
        self.applying: str | None = None
        self.orphans: frozenset[str] = frozenset()
        """Calls of the parked step an earlier resume claimed but never answered."""
        self.lease: LeaseGuard | None = None
        """The thread's lease (stores with leases): checked before anything executes."""
        self.call_ids: set[str] | None = None
        self.history_call_ids: frozenset[str] | None = None
        """Tool-call ids in the transcript (built on the leg's first call), kept unique."""
        self.open_step = False
        self.resumed = False
        self.progress = False
        """Write the run record (steps, usage) at every step's checkpoint, so a run whose
        process died can be continued from its last step (``Runtime.continue_run``)."""
        self.started_at: datetime | None = None
        self.observer: RunObserver | None = None
        self.observation: RunObservation | None = None
        """This leg as the observer sees it (``None``: no observer, nothing is reported)."""
        self._info: RunInfo | None = None
        self.trace: Mapping[str, str] = {}
        """Stored with each ticket this leg parks (``RunObservation.trace``)."""

    def add_dynamic_tools(self, sources: Sequence[tuple[str, Callable[[], Any]]]) -> None:
        """Add the tools each plugin's dynamic source gives now; ids must be new."""
        for plugin_id, source in sources:
            for extra in source():
                tid = extra.descriptor.id
                if tid in self.tools:
                    raise AgentConfigError(
                        f"plugin {plugin_id!r} supplies dynamic tool {tid!r}, which the agent "
                        f"already has; dynamic tool ids must be unique"
                    )
                self.tools[tid] = extra
                self.tool_owner[tid] = plugin_id
        self.descriptors = [t.descriptor for t in self.tools.values()]

    def next_seq(self) -> int:
        """The next event sequence number of this run."""
        self.seq += 1
        return self.seq

    def info(self) -> RunInfo:
        """The run's identity as hooks see it (one object per step, shared by its hooks)."""
        info = self._info
        if info is None or info.step != self.step:
            binding = self.binding
            info = self._info = RunInfo(
                run_id=self.run_id,
                thread_id=binding.thread_id,
                agent_id=self.config.id,
                profile_id=binding.profile_id,
                namespace=binding.namespace,
                step=self.step,
            )
        return info

    def hook_context(
        self,
        point: PhaseHookPoint | str,
        plugin_id: str,
        request: InferenceRequest | None = None,
        response: InferenceResponse | None = None,
        tool_call: ToolCall | None = None,
        tool_output: ToolOutput | None = None,
    ) -> PhaseContext:
        """The read-only context one hook of ``plugin_id`` gets at ``point``."""
        rest = self._after_plugin_id(request, response, tool_call, tool_output)
        return PhaseContext(
            point, self.engine.store, self.info(), self.transcript.view(), plugin_id, *rest
        )

    def hook_calls(
        self,
        point: PhaseHookPoint | str,
        hooks: Sequence[tuple[str, Callable[[PhaseContext], Any]]],
        request: InferenceRequest | None = None,
        response: InferenceResponse | None = None,
        tool_call: ToolCall | None = None,
        tool_output: ToolOutput | None = None,
    ) -> list[Producer]:
        """The producers running each of ``hooks`` at ``point`` on the same snapshot.

        The snapshot, run info and transcript view are read once and shared;
        each hook's context differs only in its ``plugin_id``.
        """
        store, info, view = self.engine.store, self.info(), self.transcript.view()
        rest = self._after_plugin_id(request, response, tool_call, tool_output)
        return [
            (pid, hook, PhaseContext(point, store, info, view, pid, *rest)) for pid, hook in hooks
        ]

    def _after_plugin_id(
        self,
        request: InferenceRequest | None,
        response: InferenceResponse | None,
        tool_call: ToolCall | None,
        tool_output: ToolOutput | None,
    ) -> tuple[Any, ...]:
        """``PhaseContext``'s fields after ``plugin_id``, in its field order: contexts are
        built positionally (a keyword call of the dataclass ``__init__`` costs more, once
        per hook, on every phase)."""
        return (
            request,
            response,
            tool_call,
            tool_output,
            self.children,
            self.decision,
            self.ticket,
        )

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

    def release_held(self) -> None:
        """Append the AFTER_TOOL messages held back while the step's calls ran."""
        for message in self.held:
            self.transcript.append(message)
        self.held = []
