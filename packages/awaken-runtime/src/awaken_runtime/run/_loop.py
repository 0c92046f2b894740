"""The agent loop: steps, inference, tool calls, parking and resuming.

RunStart -> [StepStart -> BeforeInference -> AfterInference -> ToolGate ->
BeforeToolExecute -> AfterToolExecute -> StepEnd]* -> RunEnd

The thread store receives whole steps: a checkpoint after RunStart, at every
StepEnd and at RunEnd. A step whose calls park is checkpointed as far as it
got (with the parked-run record), and a resume continues that same step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

from pydantic_core import to_json

from .._errors import CapabilityBoundError
from ..lifecycle._events import RunFinish, RunStart, StepEnd, StepStart
from ..lifecycle._failures import (
    Cancelled,
    CapabilityBoundFailure,
    EndCause,
    Error,
    InternalFailure,
    MaxSteps,
    NaturalEnd,
    Phase,
    Stopped,
)
from ..lifecycle._run_state import RunState
from ..messages._message import Message, ToolCall, new_id
from ..messages._transcript import Transcript
from ..models._model import TokenUsage
from ..plugins._context import CONTEXT_MESSAGES, INFERENCE_PARAMS, REQUEST_WINDOW, TOOL_FILTER
from ..plugins._gates import AwaitReason, Steer
from ..plugins._plugin import PhaseHookPoint
from ..state._engine import Command, MergePolicy, Scope, StagedCommand
from ..stores._thread_store import RunRecord, ThreadSnapshot
from ..suspension._suspension import (
    Approve,
    Decision,
    Deny,
    ParkedRun,
    Replay,
    Respond,
    ResumeTicket,
    SuspendCall,
)
from ..tools._tool import ToolOutput
from ._phases import RUNTIME, End, bind, log
from ._stop import StopTracker
from ._tool_calls import ToolCallRunner, _Parked

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


class AgentLoop(ToolCallRunner):
    """Drives one run (or one resumed leg of a run) of an agent over a thread."""

    ticket_secret: bytes | None = None
    cancel_child: Callable[[str], Awaitable[object]] | None = None
    """Cancels a waiting child run by thread id (set by the runtime)."""
    _open_step = False

    # -- guards ----------------------------------------------------------------

    async def _guards(self) -> Steer | None:
        guards = self.agent.guards
        if not guards:
            return None
        for pid, guard in guards:
            ((_, decision),) = await self._call_all(
                "RUN_END_GUARD", [(pid, bind(guard, self._ctx("run_end_guard", pid)))]
            )
            if isinstance(decision, Steer):
                return decision
        return None

    # -- steps -----------------------------------------------------------------

    async def _step(self) -> EndCause | None:
        """Run a step up to its tool calls; the caller parks or ends it."""
        self.step += 1
        self._open_step = True
        self.step_usage = _NO_USAGE
        self.step_delta = []
        if self._stop is not None:
            self._stop.start_step()
        if self.emit is not None:
            self.emit(StepStart(seq=self._next_seq(), run_id=self.run_id, step=self.step))
        if not self._idle(_STEP_START):
            await self._phase(_STEP_START)
            # Without StepStart work nothing ran since the boundary that ended
            # the previous step (or started the run): no second check needed.
            self._boundary()
        if _BEFORE_INFERENCE in self._hooks:
            await self._phase(_BEFORE_INFERENCE, request=self._base_request())
            self._boundary()
        response = await self._infer(self._request())
        # Locals: each attribute read on a pydantic model takes its slow path.
        text, tool_calls, usage = response.text, response.tool_calls, response.usage
        if self._stop is not None:
            self._stop.on_text(text)
        self.step_usage = usage
        self._uncounted.append(usage)
        step_cost = self._model.cost(usage)
        if step_cost is None:
            step_cost = response.cost  # the provider's own price table, if it knew the model
        if step_cost is not None:
            self.cost = (self.cost or 0.0) + step_cost
        reasoning = response.reasoning
        self.transcript.append(
            Message(
                id=new_id(),
                role="assistant",
                content=text or None,
                tool_calls=list(tool_calls) or None,
                metadata={"reasoning": reasoning} if reasoning else {},
            )
        )
        data = self.engine.data
        s0, s1, s2, s3 = _REQUEST_ONLY_SLOTS
        clear = (
            self._clear_request_only()
            if s0 in data or s1 in data or s2 in data or s3 in data
            else None
        )
        if clear or not self._idle(_AFTER_INFERENCE):
            await self._phase(_AFTER_INFERENCE, clear, response=response)
        self._boundary()
        if tool_calls:
            await self._run_calls(tool_calls)
            if self._held and not self._parked:
                self._release_held()
            return None
        self.final_text = response.text
        steer = await self._guards()
        if steer is None:
            return NaturalEnd()
        message = steer.message
        self.transcript.append(Message.user(message) if isinstance(message, str) else message)
        return None

    def _clear_request_only(self) -> list[StagedCommand]:
        """Commands removing the request-only entries (context, filters, params, window)."""
        data = self.engine.data
        clear: list[StagedCommand] = []
        for key in (CONTEXT_MESSAGES, TOOL_FILTER, INFERENCE_PARAMS):
            if (_RUN, key) in data:
                remove = Command.remove(key, scope=_RUN, merge=_COMM)
                clear.append(StagedCommand(RUNTIME, remove))
        if (_RUN, REQUEST_WINDOW) in data:
            clear.append(StagedCommand(RUNTIME, Command.remove(REQUEST_WINDOW, scope=_RUN)))
        return clear

    async def _end_step(self, outcome: EndCause | None) -> EndCause | None:
        """StepEnd: hooks, checkpoint, event; then max-steps."""
        if not self._idle(_STEP_END):
            await self._phase(_STEP_END)
        await self._checkpoint(force=self._resumed)
        self._open_step = False
        self._resumed = False
        if self.emit is not None:
            self.emit(
                StepEnd(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    step=self.step,
                    usage=self.step_usage,
                    state_delta=self.step_delta,
                )
            )
        self._boundary()
        if outcome is None and self._stop is not None:
            tokens = self._totals()
            reason = self._stop.check(tokens[0] + tokens[1], self.cost)
            if reason is None:
                reason = await self._plugin_stop()
            if reason is not None:
                return Stopped(reason=reason)
        if outcome is None and self.step >= self._max_steps:
            outcome = MaxSteps(max_steps=self._max_steps)
        return outcome

    async def _plugin_stop(self) -> str | None:
        hooks = self.agent.stop_conditions
        if not hooks:
            return None
        results = await self._call_all(
            "STOP_CONDITION",
            [(pid, bind(h, self._ctx("stop_condition", pid))) for pid, h in hooks],
        )
        for pid, reason in results:
            if reason:
                return f"{pid}: {reason}"
        return None

    def _track_stops(self) -> None:
        config = self.config.stop
        wanted = not config.empty or bool(self.agent.stop_conditions)
        self._stop = StopTracker(config) if wanted else None

    async def _drive(self, outcome: EndCause | None = None, *, first: bool = False) -> RunState:
        """Continue stepping until the run ends or parks, then finish."""
        cause: EndCause | None = None
        try:
            while True:
                if not first:
                    outcome = await self._step()
                first = False
                if self._parked:
                    return await self._park_run()
                cause = await self._end_step(outcome)
                if cause is not None:
                    break
        except End as end:
            cause = end.cause
        except CapabilityBoundError as exc:
            cause = _bound_failure(exc)
        except Exception as exc:
            log.exception("internal error in run %s", self.run_id)
            cause = Error(failure=InternalFailure(message=f"{type(exc).__name__}: {exc}"))
        return await self._finish(cause)

    # -- starting, parking, resuming -------------------------------------------

    def _start_event(self) -> None:
        if self.emit is not None:
            self.emit(
                RunStart(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    thread_id=self.binding.thread_id,
                    agent_id=self.config.id,
                    parent_run_id=self.parent_run_id,
                )
            )

    async def run(self, snapshot: ThreadSnapshot, input_messages: Sequence[Message]) -> RunState:
        """Start a run on a loaded thread and drive it to an end or a park."""
        self.cancel.attach()
        self._parked = []
        self._held = []
        self._resumed = False
        self._track_stops()
        self.version = snapshot.version
        self.engine.data.update(snapshot.state)
        self.transcript = Transcript(snapshot.messages)
        self._start_event()
        for message in input_messages:
            self.transcript.append(message)
        try:
            await self._phase(_RUN_START)
            await self._checkpoint(self._run_record(Phase.RUNNING, None))
            self._boundary()
        except End as end:
            return await self._finish(end.cause)
        except CapabilityBoundError as exc:
            return await self._finish(_bound_failure(exc))
        return await self._drive()

    def _ticket_parked_calls(self, snapshot_id: str) -> list[ResumeTicket]:
        """Turn the calls parked so far into tickets (and forget them as parked)."""
        tickets = []
        for parked in self._parked:
            ticket = ResumeTicket(
                ticket_id=new_id("tkt_"),
                run_id=self.run_id,
                thread_id=self.binding.thread_id,
                snapshot_id=snapshot_id,
                fingerprint=self.agent.snapshot.fingerprint,
                await_reason=parked.reason,
                call=parked.call,
                payload=parked.payload,
                deadline=parked.deadline,
                not_before=parked.not_before,
            )
            if self.ticket_secret is not None:
                ticket = ticket.signed(self.ticket_secret)
            tickets.append(ticket)
        self._parked = []
        return tickets

    def _parked_record(self, snapshot_id: str, tickets: list[ResumeTicket]) -> ParkedRun:
        return ParkedRun(
            run_id=self.run_id,
            agent_id=self.config.id,
            fingerprint=self.agent.snapshot.fingerprint,
            snapshot_id=snapshot_id,
            thread_id=self.binding.thread_id,
            profile_id=self.binding.profile_id,
            namespace=self.binding.namespace,
            step=self.step,
            seq=self._seq + 1,
            usage=self.usage,
            cost=self.cost,
            run_state=[(k, v) for (s, k), v in self.engine.data.items() if s is _RUN],
            tickets=tickets,
            held_messages=list(self._held),
        )

    async def _park_run(self) -> RunState:
        snapshot_id = new_id("snap_")
        tickets = [*self._kept_tickets, *self._ticket_parked_calls(snapshot_id)]
        return await self._finish(None, parked=self._parked_record(snapshot_id, tickets))

    def restore(self, snapshot: ThreadSnapshot, parked: ParkedRun) -> None:
        """Rebuild the run's state from the store for a resumed leg."""
        self.cancel.attach()
        self._parked = []
        self._held = list(parked.held_messages)
        self._resumed = True
        self._track_stops()
        self._open_step = True
        self.version = snapshot.version
        self.engine.data.update(snapshot.state)
        self.engine.data.update({(_RUN, k): v for k, v in parked.run_state})
        self.transcript = Transcript(snapshot.messages)
        self.step = parked.step
        self._seq = parked.seq  # the parked leg's RunFinish had this seq
        self.usage = parked.usage
        self.cost = parked.cost

    async def claim(self, parked: ParkedRun, ticket_ids: Sequence[str]) -> None:
        """Take the decided tickets out of the stored record before anything runs.

        Two resumers that loaded the same version race here; the loser gets
        ``VersionConflict`` before it executes anything, so no call runs twice.
        """
        claimed = set(ticket_ids)
        kept = [t for t in parked.tickets if t.ticket_id not in claimed]
        await self._checkpoint(parked=self._parked_record(parked.snapshot_id, kept), force=True)

    async def resume(
        self, parked: ParkedRun, decisions: Sequence[tuple[ResumeTicket, Decision]]
    ) -> RunState:
        """Apply decisions to their parked calls; continue the step once none wait."""
        decided = {ticket.ticket_id for ticket, _ in decisions}
        self._kept_tickets = [t for t in parked.tickets if t.ticket_id not in decided]
        self._start_event()
        try:
            for ticket, decision in decisions:
                await self._apply(ticket, decision)
                # Each decided call is checkpointed at once, so it is never lost or
                # redone, whatever happens to the rest of this leg.
                snapshot_id = new_id("snap_")
                self._kept_tickets = [
                    *self._kept_tickets,
                    *self._ticket_parked_calls(snapshot_id),
                ]
                # Until the step ends the thread stays parked (busy), even with no tickets.
                record = self._parked_record(snapshot_id, self._kept_tickets)
                await self._checkpoint(parked=record, force=True)
                self._boundary()
        except End as end:
            return await self._finish(end.cause)
        except CapabilityBoundError as exc:
            return await self._finish(_bound_failure(exc))
        if self._parked or self._kept_tickets:
            return await self._park_run()
        self._release_held()
        # A claimed call whose leg crashed earlier never got a result: answer it now.
        self._close_open_calls("its resume did not complete")
        return await self._drive(None, first=True)

    async def _apply(self, ticket: ResumeTicket, decision: Decision) -> None:
        call = ticket.call
        self._applying = call.id
        self._decision, self._ticket = decision, ticket
        try:
            await self._apply_decision(ticket, call, decision)
        finally:
            self._decision = self._ticket = None

    async def _apply_decision(
        self, ticket: ResumeTicket, call: ToolCall, decision: Decision
    ) -> None:
        if ticket.await_reason is AwaitReason.DELEGATION and self.children is not None:
            # The decision is for the child's pending call: resume the child.
            try:
                outcome = await self.children.resume(ticket.payload, decision)
                output = outcome.to_output()
            except SuspendCall as signal:
                self._park(_Parked(call, signal.await_reason, signal.payload))
                return
            await self._record(call, output, "success" if not output.is_error else "error", [])
        elif isinstance(decision, Approve):
            await self._tool_call(call, approved=True)
        elif isinstance(decision, Replay):
            await self._tool_call(call.model_copy(update={"arguments": decision.arguments}))
        elif isinstance(decision, Deny):
            output = ToolOutput.error(f"The call was denied: {decision.reason}")
            await self._record(call, output, "blocked", [])
        elif isinstance(decision, Respond):
            value = decision.value
            content = value if isinstance(value, str) else to_json(value).decode()
            await self._record(call, ToolOutput.ok(content), "success", [])
        else:  # the runtime validates decisions; this guards direct callers
            raise TypeError(f"not a decision: {decision!r}")

    async def cancel_parked(self, parked: ParkedRun) -> RunState:
        """End a waiting run as ``Cancelled``; its parked calls get error results."""
        self._kept_tickets = []
        for ticket in parked.tickets:
            if ticket.await_reason is AwaitReason.DELEGATION and self.cancel_child is not None:
                await self.cancel_child(ticket.payload["child_thread_id"])
        self._start_event()
        return await self._finish(Cancelled())

    # -- finishing ---------------------------------------------------------------

    def _close_open_calls(self, why: EndCause | str) -> None:
        """Answer calls of a checkpointed, unfinished step so the thread stays valid."""
        reason = why if isinstance(why, str) else f"the run ended ({why.kind})."
        answered = set()
        for message in reversed(self.transcript.view()):
            if message.role == "tool":
                answered.add(message.tool_call_id)
                continue
            if message.role == "assistant" and message.tool_calls:
                for call in message.tool_calls:
                    how = "interrupted" if call.id == self._applying else "not executed"
                    if call.id not in answered:
                        self.transcript.append(
                            Message.tool(
                                call.id,
                                f"The call was {how}: {reason}",
                                name=call.name,
                                metadata={"is_error": True},
                            )
                        )
            break

    def _run_record(self, phase: Phase, cause: EndCause | None) -> RunRecord:
        now = datetime.now(UTC)
        if self._started_at is None:
            self._started_at = now  # a resumed leg restarts this; the store keeps the first
        return RunRecord(
            run_id=self.run_id,
            thread_id=self.binding.thread_id,
            agent_id=self.config.id,
            phase=phase,
            end_cause=cause,
            steps=self.step,
            usage=self.usage,
            cost=self.cost,
            started_at=self._started_at,
            updated_at=now,
        )

    async def _finish(self, cause: EndCause | None, parked: ParkedRun | None = None) -> RunState:
        phase = Phase.WAITING if parked is not None else Phase.ENDED
        if cause is not None:
            if self._open_step:
                # The thread keeps whole steps: drop what the unfinished step added...
                self.transcript.rollback()
                self.pending = []
                if self._resumed:
                    # ...but a parked step was checkpointed part-way: close its calls.
                    self._close_open_calls(cause)
            try:
                await self._phase(_RUN_END)
            except End as end:
                if not isinstance(cause, Error):
                    cause = end.cause
            except CapabilityBoundError as exc:
                if not isinstance(cause, Error):
                    cause = _bound_failure(exc)
        await self._checkpoint(self._run_record(phase, cause), parked, force=True)
        tickets = parked.tickets if parked is not None else []
        final = self.final_text if isinstance(cause, NaturalEnd) else ""
        state = RunState(
            parent_run_id=self.parent_run_id,
            run_id=self.run_id,
            thread_id=self.binding.thread_id,
            agent_id=self.config.id,
            phase=phase,
            end_cause=cause,
            final_text=final,
            steps=self.step,
            usage=self.usage,
            cost=self.cost,
            new_messages=self.persisted,
            log=list(self.engine.log),
            state=dict(self.engine.data),
            tickets=tickets,
        )
        if self.emit is not None:
            self.emit(
                RunFinish(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    phase=phase,
                    end_cause=cause,
                    ticket=tickets[0] if tickets else None,
                    tickets=tickets,
                    final_text=final,
                    usage=self.usage,
                    cost=self.cost,
                )
            )
        return state

    _applying: str | None = None
    _kept_tickets: list[ResumeTicket] = []  # noqa: RUF012 - replaced per leg, never mutated
    _resumed = False
    _started_at: datetime | None = None


def _bound_failure(exc: CapabilityBoundError) -> Error:
    return Error(
        failure=CapabilityBoundFailure(plugin_id=exc.plugin_id, item=exc.item, message=str(exc))
    )
