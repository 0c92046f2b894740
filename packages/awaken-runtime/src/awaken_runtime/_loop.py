"""The agent loop: steps, inference, tool calls, parking and resuming.

RunStart -> [StepStart -> BeforeInference -> AfterInference -> ToolGate ->
BeforeToolExecute -> AfterToolExecute -> StepEnd]* -> RunEnd

The thread store receives whole steps: a checkpoint after RunStart, at every
StepEnd and at RunEnd. A step whose calls park is checkpointed as far as it
got (with the parked-run record), and a resume continues that same step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic_core import to_json

from ._context import CONTEXT_MESSAGES, TOOL_FILTER, visible_tools
from ._errors import CapabilityBoundError, ToolError
from ._events import RunFinish, RunStart, StepEnd, StepStart, TextDelta, ToolCallDone, ToolCallReady
from ._failures import (
    Cancelled,
    CapabilityBoundFailure,
    EndCause,
    Error,
    InternalFailure,
    MaxSteps,
    NaturalEnd,
    Phase,
    ProviderFailure,
    ToolFailure,
)
from ._gates import AwaitReason, Block, Schedule, ShortCircuit, Steer, Suspend, strongest
from ._messages import Message, ToolCall, new_id
from ._models import InferenceRequest, InferenceResponse, StreamDelta, TokenUsage
from ._phases import RUNTIME, End, PhaseRunner, fail, log
from ._plugin import PhaseContext, PhaseHookPoint
from ._run_state import RunState
from ._state import Command, Scope, StagedCommand
from ._suspension import (
    Approve,
    Decision,
    Deny,
    ParkedRun,
    Replay,
    Respond,
    ResumeTicket,
    SuspendCall,
)
from ._thread_store import RunRecord, ThreadSnapshot
from ._tools import ToolCallContext, ToolOutput
from ._transcript import Transcript

__all__ = ["AgentLoop"]

Outcome = Literal["success", "error", "blocked", "short_circuit", "suspended"]
_RUN_START = PhaseHookPoint.RUN_START
_STEP_START = PhaseHookPoint.STEP_START
_BEFORE_INFERENCE = PhaseHookPoint.BEFORE_INFERENCE
_AFTER_INFERENCE = PhaseHookPoint.AFTER_INFERENCE
_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL
_STEP_END = PhaseHookPoint.STEP_END
_RUN_END = PhaseHookPoint.RUN_END
_RUN = Scope.RUN


@dataclass(slots=True)
class _Parked:
    """A call waiting for a decision, before it becomes a ticket."""

    call: ToolCall
    reason: AwaitReason
    payload: dict[str, Any]
    deadline: datetime | None = None
    not_before: datetime | None = None


class AgentLoop(PhaseRunner):
    """Drives one run (or one resumed leg of a run) of an agent over a thread."""

    ticket_secret: bytes | None = None
    _parked: list[_Parked]
    _open_step = False

    # -- inference -------------------------------------------------------------

    def _base_request(self) -> InferenceRequest:
        """The request as it would be without any context entries or tool filters."""
        window = self.transcript.window(self.config.context_policy)
        return InferenceRequest(
            model=self.agent.snapshot.model,
            messages=self.assembler.messages(window, self.transcript.last_user_index, []),
            tools=self._all_descriptors,
            params=self.config.params,
            run_id=self.run_id,
            step=self.step,
        )

    def _request(self) -> InferenceRequest:
        store = self.engine.store
        filters = store.get_value(TOOL_FILTER, _RUN)
        entries = self.assembler.entries(store.get_value(CONTEXT_MESSAGES, _RUN), self.step)
        window = self.transcript.window(self.config.context_policy)
        messages = self.assembler.messages(window, self.transcript.last_user_index, entries)
        if filters:
            ids = visible_tools(self.tools, filters)
            self.visible = set(ids)
            tools = [self.tools[i].descriptor for i in ids]
        else:
            self.visible = None
            tools = self._all_descriptors
        return InferenceRequest(
            model=self.agent.snapshot.model,
            messages=messages,
            tools=tools,
            params=self.config.params,
            run_id=self.run_id,
            step=self.step,
        )

    async def _infer(self, request: InferenceRequest) -> InferenceResponse:
        response: InferenceResponse | None = None
        emit = self.emit
        model = self.agent.snapshot.model
        token = self.cancel
        token.arm()
        try:
            async for item in self.agent.executor.stream(request):
                if isinstance(item, StreamDelta):
                    if emit is not None:
                        emit(
                            TextDelta(
                                seq=self._next_seq(),
                                run_id=self.run_id,
                                channel=item.channel,
                                delta=item.text,
                            )
                        )
                    if token.cancelled:
                        raise End(Cancelled())
                else:
                    response = item
        except End:
            raise
        except asyncio.CancelledError:
            raise self._interrupted() from None
        except Exception as exc:
            raise fail(
                ProviderFailure(
                    provider=model.provider,
                    model=model.model,
                    message=f"{type(exc).__name__}: {exc}",
                )
            ) from exc
        finally:
            token.disarm()
        if response is None:
            raise fail(
                ProviderFailure(
                    provider=model.provider,
                    model=model.model,
                    message="the provider's stream ended without a final response",
                )
            )
        return response

    def _interrupted(self) -> BaseException:
        """Turn a CancelledError raised inside an armed await into a Cancelled end."""
        task = asyncio.current_task()
        if self.cancel.cancelled and task is not None:
            task.uncancel()
            return End(Cancelled())
        return asyncio.CancelledError()

    # -- tools -----------------------------------------------------------------

    def _emit_done(self, call: ToolCall, content: str, outcome: Outcome) -> None:
        if self.emit is not None:
            self.emit(
                ToolCallDone(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    call_id=call.id,
                    output=content,
                    outcome=outcome,
                )
            )

    async def _gate(self, call: ToolCall) -> Block | Suspend | ShortCircuit | Schedule | None:
        if call.name not in self.tools:
            names = ", ".join(sorted(self.visible or self.tools)) or "none"
            return Block(reason=f"Unknown tool '{call.name}'. Available tools: {names}.")
        if self.visible is not None and call.name not in self.visible:
            return Block(reason=f"Tool '{call.name}' is not available at this step.")
        gates = self.agent.gates
        if not gates:
            return None
        ctx = self._ctx("tool_gate", "", tool_call=call)
        results = await self._call_all(
            "TOOL_GATE", [(pid, _bind2(gate, _with_plugin(ctx, pid), call)) for pid, gate in gates]
        )
        return strongest([r for _pid, r in results])

    async def _execute(self, call: ToolCall) -> ToolOutput:
        tool = self.tools[call.name]
        if call.parse_error is not None:
            return ToolOutput.error(f"Invalid arguments for tool '{call.name}': {call.parse_error}")
        ctx = ToolCallContext(
            store=self.engine.store,
            run_id=self.run_id,
            thread_id=self.binding.thread_id,
            call_id=call.id,
            tool_id=call.name,
            cancel=self.cancel,
            profile_id=self.binding.profile_id,
        )
        token = self.cancel
        token.arm()
        try:
            output = await tool.call(call.arguments, ctx)
        except (ToolError, SuspendCall):
            raise
        except asyncio.CancelledError:
            raise self._interrupted() from None
        except Exception as exc:
            log.exception("tool %r raised (call %s)", call.name, call.id)
            return ToolOutput.error(f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}")
        finally:
            token.disarm()
        if not isinstance(output, ToolOutput):
            raise fail(
                ToolFailure(
                    tool_id=call.name,
                    call_id=call.id,
                    message=f"returned {type(output).__name__}; tools must return a ToolOutput",
                )
            )
        return output

    async def _tool_call(self, call: ToolCall, *, approved: bool = False) -> None:
        """Gate, execute and record one call, or park it."""
        if self.emit is not None:
            self.emit(
                ToolCallReady(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                )
            )
        decision = await self._gate(call)
        if approved and isinstance(decision, (Suspend, Schedule)):
            decision = None  # a human approved this call: gates may still block it
        if isinstance(decision, Suspend):
            self._park(_Parked(call, decision.await_reason, dict(decision.payload)))
            return
        if isinstance(decision, Schedule):
            self._park(
                _Parked(
                    call,
                    AwaitReason.SCHEDULED_ACTION,
                    {"at": decision.at.isoformat()},
                    not_before=decision.at,
                )
            )
            return
        batch: list[StagedCommand] = []
        if isinstance(decision, Block):
            await self._record(call, ToolOutput.error(decision.reason), "blocked", batch)
            return
        if isinstance(decision, ShortCircuit):
            await self._record(call, decision.output, "short_circuit", batch)
            return
        observers = self.agent.observers
        if observers:
            ctx = self._ctx("before_tool_execute", "", tool_call=call)
            reactions = await self._call_all(
                "TOOL_OBSERVER", [(pid, _bind(o, _with_plugin(ctx, pid))) for pid, o in observers]
            )
            self._collect("before_tool_execute", reactions, batch)
        try:
            output = await self._execute(call)
        except ToolError as exc:
            raise fail(ToolFailure(tool_id=call.name, call_id=call.id, message=str(exc))) from exc
        except SuspendCall as signal:
            self._commit("before_tool_execute", batch)
            self._park(_Parked(call, signal.await_reason, signal.payload, signal.deadline))
            return
        self._stage(batch, call.id, self.tool_owner.get(call.name), output.state)
        await self._record(call, output, "error" if output.is_error else "success", batch)

    async def _record(
        self, call: ToolCall, output: ToolOutput, outcome: Outcome, batch: list[StagedCommand]
    ) -> None:
        """Append the tool result, run AFTER_TOOL hooks and commit the call's batch."""
        if self.cancel.cancelled:
            raise End(Cancelled())
        self.transcript.append(
            Message(
                id=new_id(),
                role="tool",
                content=output.content,
                tool_call_id=call.id,
                name=call.name,
                metadata={"is_error": True} if output.is_error else {},
            )
        )
        extra = await self._phase(_AFTER_TOOL, batch, tool_call=call, tool_output=output)
        for message in extra:
            self.transcript.append(message)
        self._emit_done(call, output.content, outcome)

    def _park(self, parked: _Parked) -> None:
        self._parked.append(parked)
        self._emit_done(parked.call, "", "suspended")

    # -- guards ----------------------------------------------------------------

    async def _guards(self) -> Steer | None:
        guards = self.agent.guards
        if not guards:
            return None
        ctx = self._ctx("run_end_guard", "")
        for pid, guard in guards:
            ((_, decision),) = await self._call_all(
                "RUN_END_GUARD", [(pid, _bind(guard, _with_plugin(ctx, pid)))]
            )
            if isinstance(decision, Steer):
                return decision
        return None

    # -- steps -----------------------------------------------------------------

    async def _step(self) -> EndCause | None:
        """Run a step up to its tool calls; the caller parks or ends it."""
        self.step += 1
        self._open_step = True
        self.step_usage = TokenUsage()
        self.step_delta = []
        if self.emit is not None:
            self.emit(StepStart(seq=self._next_seq(), run_id=self.run_id, step=self.step))
        await self._phase(_STEP_START)
        self._boundary()
        if _BEFORE_INFERENCE in self._hooks:
            await self._phase(_BEFORE_INFERENCE, request=self._base_request())
            self._boundary()
        response = await self._infer(self._request())
        self.step_usage = response.usage
        self.usage = self.usage + response.usage
        step_cost = self.agent.snapshot.model.cost(response.usage)
        if step_cost is not None:
            self.cost = (self.cost or 0.0) + step_cost
        self.transcript.append(
            Message(
                id=new_id(),
                role="assistant",
                content=response.text or None,
                tool_calls=list(response.tool_calls) or None,
                metadata={"reasoning": response.reasoning} if response.reasoning else {},
            )
        )
        clear: list[StagedCommand] = []
        store = self.engine.store
        for key in (CONTEXT_MESSAGES, TOOL_FILTER):
            if (_RUN, key) in store:
                clear.append(StagedCommand(RUNTIME, Command.remove(key, scope=_RUN)))
        await self._phase(_AFTER_INFERENCE, clear, response=response)
        self._boundary()
        if response.tool_calls:
            for call in response.tool_calls:
                await self._tool_call(call)
                self._boundary()
            return None
        self.final_text = response.text
        steer = await self._guards()
        if steer is None:
            return NaturalEnd()
        message = steer.message
        self.transcript.append(Message.user(message) if isinstance(message, str) else message)
        return None

    async def _end_step(self, outcome: EndCause | None) -> EndCause | None:
        """StepEnd: hooks, checkpoint, event; then max-steps."""
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
        if outcome is None and self.step >= self.config.max_steps:
            outcome = MaxSteps(max_steps=self.config.max_steps)
        return outcome

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
                )
            )

    async def run(self, snapshot: ThreadSnapshot, input_messages: Sequence[Message]) -> RunState:
        """Start a run on a loaded thread and drive it to an end or a park."""
        self.cancel.attach()
        self._parked = []
        self._resumed = False
        self.version = snapshot.version
        self.engine.data.update(snapshot.state)
        self.transcript = Transcript(snapshot.messages)
        self._start_event()
        for message in input_messages:
            self.transcript.append(message)
        try:
            await self._phase(_RUN_START)
            await self._checkpoint()
            self._boundary()
        except End as end:
            return await self._finish(end.cause)
        except CapabilityBoundError as exc:
            return await self._finish(_bound_failure(exc))
        return await self._drive()

    async def _park_run(self) -> RunState:
        snapshot_id = new_id("snap_")
        fingerprint = self.agent.snapshot.fingerprint
        tickets = list(self._kept_tickets)
        for parked in self._parked:
            ticket = ResumeTicket(
                ticket_id=new_id("tkt_"),
                run_id=self.run_id,
                thread_id=self.binding.thread_id,
                snapshot_id=snapshot_id,
                fingerprint=fingerprint,
                await_reason=parked.reason,
                call=parked.call,
                payload=parked.payload,
                deadline=parked.deadline,
                not_before=parked.not_before,
            )
            if self.ticket_secret is not None:
                ticket = ticket.signed(self.ticket_secret)
            tickets.append(ticket)
        record = ParkedRun(
            run_id=self.run_id,
            agent_id=self.config.id,
            fingerprint=fingerprint,
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
        )
        return await self._finish(None, parked=record)

    def restore(self, snapshot: ThreadSnapshot, parked: ParkedRun) -> None:
        """Rebuild the run's state from the store for a resumed leg."""
        self.cancel.attach()
        self._parked = []
        self._resumed = True
        self._open_step = True
        self.version = snapshot.version
        self.engine.data.update(snapshot.state)
        self.engine.data.update({(_RUN, k): v for k, v in parked.run_state})
        self.transcript = Transcript(snapshot.messages)
        self.step = parked.step
        self._seq = parked.seq - 1
        self.usage = parked.usage
        self.cost = parked.cost

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
                self._boundary()
        except End as end:
            return await self._finish(end.cause)
        except CapabilityBoundError as exc:
            return await self._finish(_bound_failure(exc))
        if self._parked or self._kept_tickets:
            return await self._park_run()
        return await self._drive(None, first=True)

    async def _apply(self, ticket: ResumeTicket, decision: Decision) -> None:
        call = ticket.call
        if isinstance(decision, Approve):
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

    async def cancel_parked(self, parked: ParkedRun) -> RunState:
        """End a waiting run as ``Cancelled``; its parked calls get error results."""
        self._kept_tickets = []
        self._start_event()
        return await self._finish(Cancelled())

    # -- finishing ---------------------------------------------------------------

    def _close_open_calls(self, cause: EndCause) -> None:
        """Answer calls of a checkpointed, unfinished step so the thread stays valid."""
        answered = set()
        for message in reversed(self.transcript.view()):
            if message.role == "tool":
                answered.add(message.tool_call_id)
                continue
            if message.role == "assistant" and message.tool_calls:
                for call in message.tool_calls:
                    if call.id not in answered:
                        self.transcript.append(
                            Message.tool(
                                call.id,
                                f"The call was not executed: the run ended ({cause.kind}).",
                                name=call.name,
                                metadata={"is_error": True},
                            )
                        )
            break

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
        record = RunRecord(
            run_id=self.run_id,
            thread_id=self.binding.thread_id,
            agent_id=self.config.id,
            phase=phase,
            end_cause=cause,
            steps=self.step,
            usage=self.usage,
            cost=self.cost,
        )
        await self._checkpoint(record, parked, force=True)
        tickets = parked.tickets if parked is not None else []
        final = self.final_text if isinstance(cause, NaturalEnd) else ""
        state = RunState(
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

    _kept_tickets: list[ResumeTicket] = []  # noqa: RUF012 - replaced per leg, never mutated
    _resumed = False


def _bound_failure(exc: CapabilityBoundError) -> Error:
    return Error(
        failure=CapabilityBoundFailure(plugin_id=exc.plugin_id, item=exc.item, message=str(exc))
    )


def _bind(fn: Callable[[Any], Any], arg: Any) -> Callable[[], Any]:
    return lambda: fn(arg)


def _bind2(fn: Callable[[Any, Any], Any], a: Any, b: Any) -> Callable[[], Any]:
    return lambda: fn(a, b)


def _with_plugin(ctx: PhaseContext, plugin_id: str) -> PhaseContext:
    return PhaseContext(
        point=ctx.point,
        store=ctx.store,
        run=ctx.run,
        messages=ctx.messages,
        plugin_id=plugin_id,
        request=ctx.request,
        response=ctx.response,
        tool_call=ctx.tool_call,
        tool_output=ctx.tool_output,
    )
