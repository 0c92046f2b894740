"""The step loop: drives one run (or one resumed leg) through its phases to an end or a park.

RunStart -> [StepStart -> BeforeInference -> AfterInference -> ToolGate ->
BeforeToolExecute -> AfterToolExecute -> StepEnd]* -> RunEnd

The thread store receives whole steps: a checkpoint after RunStart, at every
StepEnd and at RunEnd. A step whose calls park is checkpointed as far as it
got (with the parked-run record), and a resume (``Resumer``) continues that
same step. ``AgentLoop`` composes the run's parts, each given the leg's
``RunDeps`` and ``LegState``: the phase engine, inference and the tool-call
executor, whose ``CallsOutcome`` the step reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from time import time as _clock
from typing import TYPE_CHECKING

from .._errors import CapabilityBoundError, VersionConflict
from .._lazy import LazyModule
from ..lifecycle._failures import (
    Cancelled,
    EndCause,
    Error,
    InternalFailure,
    LeaseLostFailure,
    MaxSteps,
    NaturalEnd,
    Phase,
    Stopped,
)
from ..lifecycle._run_state import RunState
from ..messages._message import Message, new_id
from ..messages._transcript import Transcript
from ..plugins._actions import ScheduledAction
from ..plugins._context import CONTEXT_MESSAGES, INFERENCE_PARAMS, REQUEST_WINDOW, TOOL_FILTER
from ..plugins._plugin import PhaseHookPoint
from ..state._engine import MergePolicy, Scope
from ..stores._thread_store import RunRecord, ThreadSnapshot
from ..suspension._suspension import ParkedRun, ResumeTicket
from ..tools._cancel import CancellationToken
from ._answer import committed_answer, final_answer
from ._calls_outcome import CallsOutcome
from ._deps import RunDeps
from ._ending import bound_failure, leg_result, run_record
from ._guards import plugin_stop
from ._inference import Inference
from ._leg import LegState
from ._parking import close_open_calls, parked_record, ticket_parked_calls
from ._phases import RUNTIME, PhaseEngine
from ._request import request_only_clears
from ._signals import End, lease_lost, log
from ._step import begin_step, kept_calls, record_answer
from ._stop import track_stops
from ._tool_calls import ToolCallExecutor
from ._wake import seed_actions

if TYPE_CHECKING:
    from ..lifecycle import _events as events
    from ..lifecycle._observer import Leg
else:  # runs nobody listens to never load the event classes (see _lazy.py)
    events = LazyModule("awaken_runtime.lifecycle._events")

__all__ = ["AgentLoop"]

_RUN_START = PhaseHookPoint.RUN_START
_STEP_START = PhaseHookPoint.STEP_START
_BEFORE_INFERENCE = PhaseHookPoint.BEFORE_INFERENCE
_AFTER_INFERENCE = PhaseHookPoint.AFTER_INFERENCE
_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL
_STEP_END = PhaseHookPoint.STEP_END
_RUN_END = PhaseHookPoint.RUN_END
_RUN = Scope.RUN
# The plugins' context/filter writes are COMMUTATIVE: the clear must match to share a batch.
_COMM = MergePolicy.COMMUTATIVE
_REQUEST_ONLY_SLOTS = tuple(
    (_RUN, k) for k in (CONTEXT_MESSAGES, TOOL_FILTER, INFERENCE_PARAMS, REQUEST_WINDOW)
)


class AgentLoop:
    """Steps one run leg of an agent over a thread, from its start or a resumed step."""

    __slots__ = ("calls", "deps", "inference", "leg", "phases")

    def __init__(self, deps: RunDeps, *, cancel: CancellationToken | None = None) -> None:
        self.deps = deps
        self.leg = leg = LegState(cancel, deps.output_check())
        self.phases = phases = PhaseEngine(deps, leg)
        self.inference = Inference(deps, leg)
        self.calls = ToolCallExecutor(deps, leg, phases)

    # -- steps -----------------------------------------------------------------

    async def step(self) -> EndCause | CallsOutcome | None:
        """Run a step up to its tool calls; the caller ends it (``EndCause`` or ``None``:
        the run goes on) or parks it (the ``CallsOutcome`` of calls that parked)."""
        deps = self.deps
        leg = self.leg
        phases = self.phases
        begin_step(deps, leg)
        if not phases.idle(_STEP_START):
            await phases.phase(_STEP_START)
            # Without StepStart work nothing ran since the boundary that ended
            # the previous step (or started the run): no second check needed.
            phases.boundary()
        inference = self.inference
        if not phases.idle(_BEFORE_INFERENCE):
            await phases.phase(_BEFORE_INFERENCE, request=inference.base_request())
            phases.boundary()
        lease = deps.lease
        if lease is not None and _clock() >= lease.check_at:
            await phases.hold()
        response = await inference.infer(inference.request())
        tool_calls = response.tool_calls  # a local: pydantic attribute reads are slow
        renamed = None
        if tool_calls:
            tool_calls, renamed = kept_calls(leg, tool_calls)
            if renamed is not None:
                response = response.model_copy(update={"tool_calls": list(tool_calls)})
        record_answer(deps, leg, response, tool_calls, renamed)
        data = leg.engine.data
        s0, s1, s2, s3 = _REQUEST_ONLY_SLOTS
        assembler = deps.assembler
        clear = (
            request_only_clears(data, assembler.take_marks(), RUNTIME)
            if s0 in data or s1 in data or s2 in data or s3 in data or assembler.marks
            else None
        )
        if clear or not phases.idle(_AFTER_INFERENCE):
            await phases.phase(_AFTER_INFERENCE, clear, response=response)
        phases.boundary()
        output = leg.output
        if tool_calls and (output is None or not output.claims(tool_calls)):
            done = await self.calls.run_calls(tool_calls)
            if done.parked:
                return done
            for message in done.held:  # after every result of the step: they stay contiguous
                leg.transcript.append(message)
            return None
        return await final_answer(deps, leg, phases, response, tool_calls)

    async def end_step(self, outcome: EndCause | None) -> EndCause | None:
        """StepEnd: hooks, checkpoint, event; then the stop conditions and max-steps."""
        deps = self.deps
        leg = self.leg
        phases = self.phases
        if not phases.idle(_STEP_END):
            await phases.phase(_STEP_END)
        # A resumed leg's first checkpoint unparks the thread: its record says RUNNING again.
        resumed = leg.resumed
        record = run_record(deps, leg, Phase.RUNNING, None) if resumed or deps.progress else None
        await phases.checkpoint(record, force=resumed)
        leg.open_step = False
        leg.resumed = False
        if deps.emit is not None:
            deps.emit(
                events.StepEnd(
                    seq=leg.next_seq(),
                    run_id=deps.run_id,
                    step=leg.step,
                    usage=leg.step_usage,
                    state_delta=leg.step_delta,
                    finish_reason=leg.finish_reason,
                    model=leg.answered_by,
                )
            )
        phases.boundary()
        # A natural end is a StepEnd like any other: a final answer that matches
        # stop_on_text (or ends over a budget) ends Stopped, as documented.
        if leg.stop is not None and (outcome is None or isinstance(outcome, NaturalEnd)):
            tokens = leg.totals()
            reason = leg.stop.check(tokens[0] + tokens[1], leg.cost)
            if reason is None:
                reason = await plugin_stop(deps, phases)
            if reason is not None:
                return Stopped(reason=reason)
        if outcome is None and leg.step >= deps.max_steps:
            outcome = MaxSteps(max_steps=deps.max_steps)
        return outcome

    async def drive(self, outcome: EndCause | None = None, *, first: bool = False) -> RunState:
        """Continue stepping until the run ends or parks, then finish."""
        deps = self.deps
        cause: EndCause | None = None
        try:
            while True:
                if not first:
                    ended = await self.step()
                    if isinstance(ended, CallsOutcome):  # calls of the step parked
                        return await self.park(ended)
                    outcome = ended
                first = False
                cause = await self.end_step(outcome)
                if cause is not None:
                    break
        except End as end:
            cause = end.cause
        except CapabilityBoundError as exc:
            cause = bound_failure(exc)
        except VersionConflict as exc:
            cause = lease_lost(deps.binding.thread_id, str(exc))
        except Exception as exc:
            log.exception("internal error in run %s", deps.run_id)
            cause = Error(failure=InternalFailure(message=f"{type(exc).__name__}: {exc}"))
        return await self.finish(cause)

    # -- starting, parking, finishing -------------------------------------------

    def open_leg(self, snapshot: ThreadSnapshot, *, resumed: bool = False) -> None:
        """Start the leg on a loaded thread: watch its cancel token, start its stop
        figures and take the thread's state, messages and version (``resumed``: the
        leg continues a parked step, which is open already)."""
        leg = self.leg
        leg.cancel.attach()
        leg.resumed = leg.open_step = resumed
        track_stops(self.deps, leg)
        leg.version = snapshot.version
        leg.engine.data.update(snapshot.state)
        leg.transcript = Transcript(snapshot.messages)
        leg.history_call_ids = snapshot.call_ids

    def start_event(self, kind: Leg = "start", tickets: Sequence[ResumeTicket] = ()) -> None:
        """Emit this leg's ``RunStart``; start its observation (``tickets``: those it answers)."""
        deps = self.deps
        leg = self.leg
        if deps.observer is not None:
            from ._observing import observe_start  # only runs with an observer load it

            observe_start(deps, leg, kind, tickets)
        if deps.emit is not None:
            deps.emit(
                events.RunStart(
                    seq=leg.next_seq(),
                    run_id=deps.run_id,
                    thread_id=deps.binding.thread_id,
                    agent_id=deps.config.id,
                    parent_run_id=deps.parent_run_id,
                )
            )

    async def run(
        self,
        snapshot: ThreadSnapshot,
        input_messages: Sequence[Message],
        actions: Sequence[ScheduledAction] = (),
    ) -> RunState:
        """Start a run on a loaded thread and drive it to an end or a park (``actions``:
        scheduled actions carried in from an ended run, see ``_wake``)."""
        deps = self.deps
        leg = self.leg
        self.open_leg(snapshot)
        carried = seed_actions(deps, leg, actions) if actions else None
        self.start_event()
        for message in input_messages:
            leg.transcript.append(message)
        try:
            await self.phases.phase(_RUN_START, carried)
            await self.phases.checkpoint(run_record(deps, leg, Phase.RUNNING, None))
            self.phases.boundary()
        except End as end:
            return await self.finish(end.cause)
        except CapabilityBoundError as exc:
            return await self.finish(bound_failure(exc))
        except VersionConflict as exc:
            return await self.finish(lease_lost(deps.binding.thread_id, str(exc)))
        return await self.drive()

    async def carry_on(self, snapshot: ThreadSnapshot, record: RunRecord) -> RunState:
        """Continue a run whose process died, from its last committed step (``record``)."""
        leg = self.leg
        self.open_leg(snapshot)
        leg.step, leg.usage, leg.cost = record.steps, record.usage, record.cost
        leg.started_at = record.started_at
        self.start_event("continue")
        if committed_answer(leg, snapshot.messages):
            return await self.finish(NaturalEnd())  # its answer is in: never asked twice
        return await self.drive()

    async def park(self, done: CallsOutcome, kept: Sequence[ResumeTicket] = ()) -> RunState:
        """End this leg ``WAITING``: the calls ``done`` parked become tickets in the stored
        record, beside the tickets still ``kept`` from the leg that parked before."""
        deps = self.deps
        leg = self.leg
        if leg.effects:
            # Effects of what committed before the park, and of the Suspend decisions
            # themselves (their outcome is the parked record): delivered once, now.
            await self.phases.run_effects(_AFTER_TOOL)
        snapshot_id = new_id("snap_")
        tickets = [*kept, *ticket_parked_calls(deps, leg, done.parked, snapshot_id)]
        parked = parked_record(deps, leg, snapshot_id, tickets, done.held)
        return await self.finish(None, parked=parked)

    async def finish(self, cause: EndCause | None, parked: ParkedRun | None = None) -> RunState:
        """RunEnd (unless parking), the last checkpoint and the leg's ``RunState``."""
        deps = self.deps
        leg = self.leg
        phase = Phase.WAITING if parked is not None else Phase.ENDED
        if leg.deadline is not None:
            leg.deadline.cancel()
            leg.deadline = None
            if isinstance(cause, Cancelled) and leg.cancel.reason == leg.timeout_reason:
                cause = Stopped(reason=leg.timeout_reason)
        lost = isinstance(cause, Error) and isinstance(cause.failure, LeaseLostFailure)
        executed = [m.tool_call_id for m in leg.transcript.uncommitted() if m.role == "tool"]
        if cause is not None:
            self.phases.discard()
            if leg.open_step and lost:
                # What executed happened: keep it, and answer the calls never run (the
                # lease is checked before a call executes, so none was under way).
                leg.applying = None
                close_open_calls(leg, "the run lost its thread before it ran the call.")
            elif leg.open_step:
                # The thread keeps whole steps: drop what the unfinished step added...
                leg.transcript.rollback()
                leg.pending = []
                if leg.resumed:
                    # ...but a parked step was checkpointed part-way: close its calls.
                    close_open_calls(leg, cause)
            try:
                await self.phases.phase(_RUN_END)
            except End as end:
                if not isinstance(cause, Error):
                    cause = end.cause
            except CapabilityBoundError as exc:
                if not isinstance(cause, Error):
                    cause = bound_failure(exc)
        # A waiting run keeps its pending actions for the resume; an ended one reports them.
        pending = self.phases.unrun_actions() if parked is None else []
        try:
            record = run_record(deps, leg, phase, cause, pending)
            await self.phases.checkpoint(record, parked, force=True)
        except VersionConflict as exc:
            # Another run committed to the thread: nothing of this leg's end is stored.
            failure = cause.failure if lost else None  # type: ignore[union-attr]
            why = failure.message if isinstance(failure, LeaseLostFailure) else str(exc)
            cause = Error(
                failure=LeaseLostFailure(
                    thread_id=deps.binding.thread_id,
                    message=why,
                    unrecorded_call_ids=tuple(i for i in executed if i is not None),
                )
            )
            phase, parked = Phase.ENDED, None
        tickets = parked.tickets if parked is not None else []
        return leg_result(deps, leg, phase, cause, tickets, pending)
