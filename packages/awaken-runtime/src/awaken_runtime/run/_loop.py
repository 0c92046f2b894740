"""The step loop: drives one run (or one resumed leg) through its phases to an end or a park.

RunStart -> [StepStart -> BeforeInference -> AfterInference -> ToolGate ->
BeforeToolExecute -> AfterToolExecute -> StepEnd]* -> RunEnd

The thread store receives whole steps: a checkpoint after RunStart, at every
StepEnd and at RunEnd. A step whose calls park is checkpointed as far as it
got (with the parked-run record), and a resume (``Resumer``) continues that
same step. ``AgentLoop`` composes the run's parts around one ``RunContext``:
the phase engine, inference and the tool-call executor.
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
from ..messages._call_ids import call_ids_of, prepare_calls
from ..messages._message import Message, new_id
from ..messages._transcript import Transcript
from ..models._model import TokenUsage
from ..plugins._actions import ScheduledAction
from ..plugins._context import CONTEXT_MESSAGES, INFERENCE_PARAMS, REQUEST_WINDOW, TOOL_FILTER
from ..plugins._plugin import PhaseHookPoint
from ..state._engine import MergePolicy, Scope
from ..stores._thread_store import RunRecord, ThreadSnapshot
from ..suspension._suspension import ParkedRun, ResumeTicket
from ..tools._cancel import CancellationToken
from ._answer import committed_answer, final_answer, step_metadata
from ._ending import bound_failure, leg_result, run_record
from ._guards import plugin_stop
from ._inference import Inference
from ._parking import close_open_calls, parked_record, ticket_parked_calls
from ._phases import RUNTIME, PhaseEngine
from ._request import request_only_clears
from ._run_context import Emit, RunContext
from ._signals import End, lease_lost, log
from ._stop import track_stops
from ._tool_calls import ToolCallExecutor
from ._wake import seed_actions

if TYPE_CHECKING:
    from ..agents._resolve import ResolvedAgent
    from ..lifecycle import _events as events
    from ..lifecycle._observer import Leg
    from ..stores._thread_store import ScopeBinding, ThreadStore
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
_NO_USAGE = TokenUsage()


class AgentLoop:
    """Steps one run leg of an agent over a thread, from its start or a resumed step."""

    __slots__ = ("calls", "ctx", "inference", "phases")

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
        self.ctx = ctx = RunContext(agent, store, binding, run_id, cancel=cancel, emit=emit)
        self.phases = phases = PhaseEngine(ctx)
        self.inference = Inference(ctx)
        self.calls = ToolCallExecutor(ctx, phases)

    # -- steps -----------------------------------------------------------------

    async def step(self) -> EndCause | None:
        """Run a step up to its tool calls; the caller parks or ends it."""
        ctx = self.ctx
        phases = self.phases
        ctx.step += 1
        ctx.open_step = True
        ctx.step_usage = _NO_USAGE
        ctx.step_delta = []
        stop = ctx.stop
        if stop is not None:
            stop.start_step()
        if ctx.emit is not None:
            ctx.emit(events.StepStart(seq=ctx.next_seq(), run_id=ctx.run_id, step=ctx.step))
        if not phases.idle(_STEP_START):
            await phases.phase(_STEP_START)
            # Without StepStart work nothing ran since the boundary that ended
            # the previous step (or started the run): no second check needed.
            phases.boundary()
        if not phases.idle(_BEFORE_INFERENCE):
            await phases.phase(_BEFORE_INFERENCE, request=self.inference.base_request())
            phases.boundary()
        inference = self.inference
        lease = ctx.lease
        if lease is not None and _clock() >= lease.check_at:
            await phases.hold()
        response = await inference.infer(inference.request())
        # Locals: each attribute read on a pydantic model takes its slow path.
        text, tool_calls, usage = response.text, response.tool_calls, response.usage
        renamed = None
        if tool_calls:
            seen = ctx.call_ids
            if seen is None:
                # Once per leg: the ids the store already indexed, else one scan of the thread.
                known = ctx.history_call_ids
                seen = ctx.call_ids = (
                    set(known) if known is not None else call_ids_of(ctx.transcript.view())
                )
            # Inline (a function call per step costs more than this scan): fresh ids and
            # flat arguments, the usual case, need nothing more.
            added = 0
            for call in tool_calls:
                cid = call.id
                if not cid or cid in seen:
                    break
                for value in call.arguments.values():
                    if isinstance(value, (dict, list)):
                        break
                else:
                    seen.add(cid)
                    added += 1
                    continue
                break
            if added < len(tool_calls):
                # Unique ids, and poison arguments become an argument error before anything
                # is stored; hooks, results and tickets all see the calls as kept from here.
                seen.difference_update(c.id for c in tool_calls[:added])
                tool_calls, renamed = prepare_calls(tool_calls, seen)
                if renamed is not None:
                    response = response.model_copy(update={"tool_calls": list(tool_calls)})
        if stop is not None:
            stop.on_text(text)
        ctx.step_usage = usage
        ctx.uncounted.append(usage)
        step_cost = ctx.model.cost(usage)
        if step_cost is None:
            step_cost = response.cost  # the provider's own price table, if it knew the model
        if step_cost is not None:
            ctx.cost = (ctx.cost or 0.0) + step_cost
        ctx.transcript.append(
            Message(
                id=new_id(),
                role="assistant",
                content=text or None,
                tool_calls=list(tool_calls) or None,
                metadata=step_metadata(response, renamed),
            )
        )
        data = ctx.engine.data
        s0, s1, s2, s3 = _REQUEST_ONLY_SLOTS
        clear = (
            request_only_clears(data, ctx.assembler.take_marks(), RUNTIME)
            if s0 in data or s1 in data or s2 in data or s3 in data or ctx.assembler.marks
            else None
        )
        if clear or not phases.idle(_AFTER_INFERENCE):
            await phases.phase(_AFTER_INFERENCE, clear, response=response)
        phases.boundary()
        if tool_calls and (ctx.output is None or not ctx.output.claims(tool_calls)):
            await self.calls.run_calls(tool_calls)
            if ctx.held and not ctx.parked:
                ctx.release_held()
            return None
        return await final_answer(ctx, phases, response, tool_calls)

    async def end_step(self, outcome: EndCause | None) -> EndCause | None:
        """StepEnd: hooks, checkpoint, event; then the stop conditions and max-steps."""
        ctx = self.ctx
        phases = self.phases
        if not phases.idle(_STEP_END):
            await phases.phase(_STEP_END)
        # A resumed leg's first checkpoint unparks the thread: its record says RUNNING again.
        resumed = ctx.resumed
        record = run_record(ctx, Phase.RUNNING, None) if resumed or ctx.progress else None
        await phases.checkpoint(record, force=resumed)
        ctx.open_step = False
        ctx.resumed = False
        if ctx.emit is not None:
            ctx.emit(
                events.StepEnd(
                    seq=ctx.next_seq(),
                    run_id=ctx.run_id,
                    step=ctx.step,
                    usage=ctx.step_usage,
                    state_delta=ctx.step_delta,
                    finish_reason=ctx.finish_reason,
                    model=ctx.answered_by,
                )
            )
        phases.boundary()
        # A natural end is a StepEnd like any other: a final answer that matches
        # stop_on_text (or ends over a budget) ends Stopped, as documented.
        if ctx.stop is not None and (outcome is None or isinstance(outcome, NaturalEnd)):
            tokens = ctx.totals()
            reason = ctx.stop.check(tokens[0] + tokens[1], ctx.cost)
            if reason is None:
                reason = await plugin_stop(ctx, phases)
            if reason is not None:
                return Stopped(reason=reason)
        if outcome is None and ctx.step >= ctx.max_steps:
            outcome = MaxSteps(max_steps=ctx.max_steps)
        return outcome

    async def drive(self, outcome: EndCause | None = None, *, first: bool = False) -> RunState:
        """Continue stepping until the run ends or parks, then finish."""
        ctx = self.ctx
        cause: EndCause | None = None
        try:
            while True:
                if not first:
                    outcome = await self.step()
                first = False
                if ctx.parked:
                    return await self.park()
                cause = await self.end_step(outcome)
                if cause is not None:
                    break
        except End as end:
            cause = end.cause
        except CapabilityBoundError as exc:
            cause = bound_failure(exc)
        except VersionConflict as exc:
            cause = lease_lost(ctx.binding.thread_id, str(exc))
        except Exception as exc:
            log.exception("internal error in run %s", ctx.run_id)
            cause = Error(failure=InternalFailure(message=f"{type(exc).__name__}: {exc}"))
        return await self.finish(cause)

    # -- starting, parking, finishing -------------------------------------------

    def start_event(self, leg: Leg = "start", tickets: Sequence[ResumeTicket] = ()) -> None:
        """Emit this leg's ``RunStart``; start its observation (``tickets``: those it answers)."""
        ctx = self.ctx
        if ctx.observer is not None:
            from ._observing import observe_start  # only runs with an observer load it

            observe_start(ctx, ctx.observer, leg, tickets)
        if ctx.emit is not None:
            ctx.emit(
                events.RunStart(
                    seq=ctx.next_seq(),
                    run_id=ctx.run_id,
                    thread_id=ctx.binding.thread_id,
                    agent_id=ctx.config.id,
                    parent_run_id=ctx.parent_run_id,
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
        ctx = self.ctx
        ctx.cancel.attach()
        ctx.parked = []
        ctx.held = []
        ctx.resumed = False
        track_stops(ctx)
        ctx.version = snapshot.version
        ctx.engine.data.update(snapshot.state)
        ctx.transcript = Transcript(snapshot.messages)
        ctx.history_call_ids = snapshot.call_ids
        carried = seed_actions(ctx, actions) if actions else None
        self.start_event()
        for message in input_messages:
            ctx.transcript.append(message)
        try:
            await self.phases.phase(_RUN_START, carried)
            await self.phases.checkpoint(run_record(ctx, Phase.RUNNING, None))
            self.phases.boundary()
        except End as end:
            return await self.finish(end.cause)
        except CapabilityBoundError as exc:
            return await self.finish(bound_failure(exc))
        except VersionConflict as exc:
            return await self.finish(lease_lost(ctx.binding.thread_id, str(exc)))
        return await self.drive()

    async def carry_on(self, snapshot: ThreadSnapshot, record: RunRecord) -> RunState:
        """Continue a run whose process died, from its last committed step (``record``)."""
        ctx = self.ctx
        ctx.cancel.attach()
        ctx.parked, ctx.held, ctx.resumed = [], [], False
        track_stops(ctx)
        ctx.version = snapshot.version
        ctx.engine.data.update(snapshot.state)
        ctx.transcript = Transcript(snapshot.messages)
        ctx.history_call_ids = snapshot.call_ids
        ctx.step, ctx.usage, ctx.cost = record.steps, record.usage, record.cost
        ctx.started_at = record.started_at
        self.start_event("continue")
        if committed_answer(ctx, snapshot.messages):
            return await self.finish(NaturalEnd())  # its answer is in: never asked twice
        return await self.drive()

    async def park(self) -> RunState:
        """End this leg ``WAITING``: the parked calls become tickets in the stored record."""
        ctx = self.ctx
        if ctx.effects:
            # Effects of what committed before the park, and of the Suspend decisions
            # themselves (their outcome is the parked record): delivered once, now.
            await self.phases.run_effects(_AFTER_TOOL)
        snapshot_id = new_id("snap_")
        tickets = [*ctx.kept_tickets, *ticket_parked_calls(ctx, snapshot_id)]
        return await self.finish(None, parked=parked_record(ctx, snapshot_id, tickets))

    async def finish(self, cause: EndCause | None, parked: ParkedRun | None = None) -> RunState:
        """RunEnd (unless parking), the last checkpoint and the leg's ``RunState``."""
        ctx = self.ctx
        phase = Phase.WAITING if parked is not None else Phase.ENDED
        if ctx.deadline is not None:
            ctx.deadline.cancel()
            ctx.deadline = None
            if isinstance(cause, Cancelled) and ctx.cancel.reason == ctx.timeout_reason:
                cause = Stopped(reason=ctx.timeout_reason)
        lost = isinstance(cause, Error) and isinstance(cause.failure, LeaseLostFailure)
        executed = [m.tool_call_id for m in ctx.transcript.uncommitted() if m.role == "tool"]
        if cause is not None:
            self.phases.discard()
            if ctx.open_step and lost:
                # What executed happened: keep it, and answer the calls never run (the
                # lease is checked before a call executes, so none was under way).
                ctx.applying = None
                close_open_calls(ctx, "the run lost its thread before it ran the call.")
            elif ctx.open_step:
                # The thread keeps whole steps: drop what the unfinished step added...
                ctx.transcript.rollback()
                ctx.pending = []
                if ctx.resumed:
                    # ...but a parked step was checkpointed part-way: close its calls.
                    close_open_calls(ctx, cause)
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
            record = run_record(ctx, phase, cause, pending)
            await self.phases.checkpoint(record, parked, force=True)
        except VersionConflict as exc:
            # Another run committed to the thread: nothing of this leg's end is stored.
            failure = cause.failure if lost else None  # type: ignore[union-attr]
            why = failure.message if isinstance(failure, LeaseLostFailure) else str(exc)
            cause = Error(
                failure=LeaseLostFailure(
                    thread_id=ctx.binding.thread_id,
                    message=why,
                    unrecorded_call_ids=tuple(i for i in executed if i is not None),
                )
            )
            phase, parked = Phase.ENDED, None
        tickets = parked.tickets if parked is not None else []
        return leg_result(ctx, phase, cause, tickets, pending)
