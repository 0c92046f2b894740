"""The agent loop: phases, hooks, gates, tool execution and commits for one run.

RunStart -> [StepStart -> BeforeInference -> AfterInference -> ToolGate ->
BeforeToolExecute -> AfterToolExecute -> StepEnd]* -> RunEnd

Only this module commits state. Every phase gathers the commands its
producers staged, checks each against the producing plugin's capability
bound, and commits them as one batch. The thread store receives whole steps:
a checkpoint after RunStart, at every StepEnd, and at RunEnd.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ._cancel import CancellationToken
from ._context import CONTEXT_MESSAGES, TOOL_FILTER, visible_tools
from ._errors import CapabilityBoundError, StateConflictError, ToolError
from ._events import (
    AgentEvent,
    RunFinish,
    RunStart,
    StepEnd,
    StepStart,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)
from ._failures import (
    Cancelled,
    CapabilityBoundFailure,
    EndCause,
    Error,
    InternalFailure,
    MaxSteps,
    NaturalEnd,
    Phase,
    PluginFailure,
    ProviderFailure,
    StateConflictFailure,
    Stopped,
    ToolFailure,
)
from ._gates import Block, Schedule, ShortCircuit, Steer, Suspend, strongest
from ._messages import Message, ToolCall, new_id
from ._models import InferenceRequest, InferenceResponse, StreamDelta, TokenUsage
from ._plugin import HookReaction, PhaseContext, PhaseHookPoint, RunInfo
from ._request import RequestAssembler
from ._resolve import ResolvedAgent
from ._run_state import RunState
from ._state import Command, CommittedBatch, Scope, StagedCommand, StateEngine
from ._thread_store import RunRecord, ScopeBinding, ThreadStore
from ._tools import Tool, ToolCallContext, ToolOutput
from ._transcript import Transcript

__all__ = ["AgentLoop"]

log = logging.getLogger("awaken_runtime")

RUNTIME = "runtime"
"""Producer name of commands the loop itself stages."""

Emit = Callable[[AgentEvent], None]
_NO_MESSAGES: list[Message] = []
# Module constants: enum attribute access is slow on the per-step path.
_RUN_START = PhaseHookPoint.RUN_START
_STEP_START = PhaseHookPoint.STEP_START
_BEFORE_INFERENCE = PhaseHookPoint.BEFORE_INFERENCE
_AFTER_INFERENCE = PhaseHookPoint.AFTER_INFERENCE
_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL
_STEP_END = PhaseHookPoint.STEP_END
_RUN_END = PhaseHookPoint.RUN_END
_RUN = Scope.RUN
Outcome = Literal["success", "error", "blocked", "short_circuit", "suspended"]


class _End(Exception):
    """Internal: unwinds the loop with an end cause."""

    def __init__(self, cause: EndCause) -> None:
        self.cause = cause


def _fail(failure: Any) -> _End:
    return _End(Error(failure=failure))


class AgentLoop:
    """Drives one run of a resolved agent over one thread."""

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
        self.config = agent.snapshot.config
        self.store = store
        self.binding = binding
        self.run_id = run_id
        self.cancel = cancel or CancellationToken()
        self.emit = emit
        self.engine = StateEngine()
        self.transcript = Transcript()
        self.version = 0
        self.step = 0
        self.usage = TokenUsage()
        self.cost: float | None = None
        self.step_usage = TokenUsage()
        self.step_delta: list[Command] = []
        self.pending: list[CommittedBatch] = []
        self.persisted: list[Message] = []
        self.final_text = ""
        self.stop_reason: str | None = None
        self.assembler = RequestAssembler(self.config.instructions)
        self.tools: dict[str, Tool] = dict(agent.tools)
        self.visible: set[str] | None = None
        self._seq = 0
        self._hooks = agent.hooks
        self.tool_owner: dict[str, str] = dict(agent.tool_owner)
        self._all_descriptors = [t.descriptor for t in self.tools.values()]

    def refresh_descriptors(self) -> None:
        """Recompute the tool list after tools were added (dynamic tools)."""
        self._all_descriptors = [t.descriptor for t in self.tools.values()]

    # -- events ------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _info(self) -> RunInfo:
        return RunInfo(
            run_id=self.run_id,
            thread_id=self.binding.thread_id,
            agent_id=self.config.id,
            profile_id=self.binding.profile_id,
            namespace=self.binding.namespace,
            step=self.step,
        )

    # -- committing --------------------------------------------------------

    def _check_bound(self, plugin_id: str, command: Command) -> None:
        bound = self.agent.bounds[plugin_id]
        if command.key == CONTEXT_MESSAGES and command.scope is _RUN:
            value = getattr(command.action, "value", None) or {}
            bands = {str(entry.get("band")) for entry in value.values() if isinstance(entry, dict)}
            allowed = {b.value for b in bound.context_bands}
            if not allowed or not bands <= allowed:
                extra = ", ".join(sorted(bands - allowed)) or "any band"
                raise CapabilityBoundError(
                    plugin_id, f"context_bands {{{extra}}}", f"injects context into {extra}"
                )
            return
        if command.key == TOOL_FILTER and command.scope is _RUN:
            value = getattr(command.action, "value", None) or {}
            if not bound.narrows_tools or set(value) - {plugin_id}:
                raise CapabilityBoundError(
                    plugin_id, "narrows_tools=True", "narrows tools (only its own filter entry)"
                )
            return
        if not bound.allows_key(command.scope, command.key):
            raise CapabilityBoundError(
                plugin_id,
                f"state key {command.scope.value}:{command.key}",
                f"writes {command.scope.value}:{command.key!r}",
            )

    def _stage(
        self,
        batch: list[StagedCommand],
        producer: str,
        plugin_id: str | None,
        cmds: Sequence[Command],
    ) -> None:
        for command in cmds:
            if plugin_id is not None:
                self._check_bound(plugin_id, command)
            batch.append(StagedCommand(producer, command))

    def _commit(self, phase: str, batch: list[StagedCommand]) -> None:
        if not batch:
            return
        try:
            committed = self.engine.commit(phase, batch)
        except StateConflictError as exc:
            raise _fail(
                StateConflictFailure(
                    key=exc.key, scope=exc.scope, producers=exc.producers, message=str(exc)
                )
            ) from exc
        if committed is not None:
            self.pending.append(committed)
            self.step_delta.extend(c for _p, c in committed.entries)

    async def _checkpoint(self, record: RunRecord | None = None) -> None:
        messages = self.transcript.uncommitted()
        if not messages and not self.pending and record is None:
            return
        self.version = await self.store.commit(
            self.binding, self.version, messages, self.pending, record
        )
        self.transcript.mark_committed()
        self.persisted.extend(messages)
        self.pending = []

    # -- hooks ---------------------------------------------------------------

    def _ctx(self, point: PhaseHookPoint | str, plugin_id: str, **extra: Any) -> PhaseContext:
        return PhaseContext(
            point=point,
            store=self.engine.store,
            run=self._info(),
            messages=self.transcript.view(),
            plugin_id=plugin_id,
            **extra,
        )

    async def _call_all(
        self, label: str, calls: list[tuple[str, Callable[[], Any]]]
    ) -> list[tuple[str, Any]]:
        """Run producer callables concurrently; results in producer order."""

        async def one(plugin_id: str, fn: Callable[[], Any]) -> Any:
            try:
                result = fn()
                if inspect.isawaitable(result):
                    result = await result
                return result
            except _End:
                raise
            except Exception as exc:
                log.exception("plugin %r raised in %s", plugin_id, label)
                raise _fail(
                    PluginFailure(
                        plugin_id=plugin_id,
                        hook=label,
                        message=f"{type(exc).__name__}: {exc}",
                    )
                ) from exc

        if len(calls) == 1:
            pid, fn = calls[0]
            return [(pid, await one(pid, fn))]
        results = await asyncio.gather(*(one(pid, fn) for pid, fn in calls))
        return [(pid, r) for (pid, _fn), r in zip(calls, results, strict=True)]

    def _collect(
        self,
        point: PhaseHookPoint | str,
        reactions: list[tuple[str, Any]],
        batch: list[StagedCommand],
        allow_messages: bool = False,
    ) -> list[Message]:
        messages: list[Message] = []
        for plugin_id, reaction in reactions:
            if reaction is None:
                continue
            if not isinstance(reaction, HookReaction):
                raise _fail(
                    PluginFailure(
                        plugin_id=plugin_id,
                        hook=str(point),
                        message=f"returned {type(reaction).__name__}; "
                        "return a HookReaction or None",
                    )
                )
            if reaction.messages:
                if not allow_messages:
                    raise _fail(
                        PluginFailure(
                            plugin_id=plugin_id,
                            hook=str(point),
                            message="returned transcript messages; only AFTER_TOOL hooks may "
                            "(use inject(ContextMessage(...)) for request-only context)",
                        )
                    )
                messages.extend(reaction.messages)
            self._stage(batch, plugin_id, plugin_id, reaction.commands)
            if reaction.stop and self.stop_reason is None:
                self.stop_reason = f"{plugin_id}: {reaction.stop}"
        return messages

    async def _phase(
        self,
        point: PhaseHookPoint,
        batch: list[StagedCommand] | None = None,
        **extra: Any,
    ) -> list[Message]:
        """Run the hooks of ``point`` on one snapshot and commit once."""
        hooks = self._hooks.get(point)
        if not hooks:
            if batch:
                self._commit(point, batch)
            return _NO_MESSAGES
        batch = batch if batch is not None else []
        messages: list[Message] = []
        if hooks:
            reactions = await self._call_all(
                point.name,
                [(pid, _bind(hook, self._ctx(point, pid, **extra))) for pid, hook in hooks],
            )
            messages = self._collect(point, reactions, batch, allow_messages=point is _AFTER_TOOL)
        self._commit(point, batch)
        return messages

    def _boundary(self) -> None:
        if self.cancel.cancelled:
            raise _End(Cancelled())
        if self.stop_reason is not None:
            raise _End(Stopped(reason=self.stop_reason))

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
        raw_context = store.get_value(CONTEXT_MESSAGES, _RUN)
        filters = store.get_value(TOOL_FILTER, _RUN)
        entries = self.assembler.entries(raw_context, self.step)
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
        try:
            async for item in self.agent.executor.stream(request):
                if isinstance(item, StreamDelta):
                    if emit is not None:
                        emit(
                            TextDelta(
                                seq=self._next_seq(),
                                run_id=self.run_id,
                                type="text_delta",
                                channel=item.channel,
                                delta=item.text,
                            )
                        )
                    if self.cancel.cancelled:
                        raise _End(Cancelled())
                else:
                    response = item
        except (_End, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise _fail(
                ProviderFailure(
                    provider=model.provider,
                    model=model.model,
                    message=f"{type(exc).__name__}: {exc}",
                )
            ) from exc
        if response is None:
            raise _fail(
                ProviderFailure(
                    provider=model.provider,
                    model=model.model,
                    message="the provider's stream ended without a final response",
                )
            )
        return response

    # -- tools -----------------------------------------------------------------

    def _emit_done(self, call: ToolCall, output: ToolOutput, outcome: Outcome) -> None:
        if self.emit is not None:
            self.emit(
                ToolCallDone(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    type="tool_call_done",
                    call_id=call.id,
                    output=output.content,
                    outcome=outcome,
                )
            )

    async def _gate(self, call: ToolCall) -> Block | Suspend | ShortCircuit | Schedule | None:
        if call.name not in self.tools:
            return Block(
                reason=f"Unknown tool '{call.name}'. Available tools: "
                f"{', '.join(sorted(self.visible or self.tools)) or 'none'}."
            )
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
        try:
            output = await tool.call(call.arguments, ctx)
        except ToolError as exc:
            raise _fail(ToolFailure(tool_id=call.name, call_id=call.id, message=str(exc))) from exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("tool %r raised (call %s)", call.name, call.id)
            return ToolOutput.error(f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}")
        if not isinstance(output, ToolOutput):
            raise _fail(
                ToolFailure(
                    tool_id=call.name,
                    call_id=call.id,
                    message=f"returned {type(output).__name__}; tools must return a ToolOutput",
                )
            )
        return output

    async def _tool_call(self, call: ToolCall) -> dict[str, Any] | None:
        """Gate, execute and record one call; return a parked-call record if it waits."""
        if self.emit is not None:
            self.emit(
                ToolCallReady(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    type="tool_call_ready",
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                )
            )
        decision = await self._gate(call)
        batch: list[StagedCommand] = []
        outcome: Outcome
        if isinstance(decision, (Suspend, Schedule)):
            self._emit_done(call, ToolOutput.ok(""), "suspended")
            return {
                "call": call.model_dump(mode="json"),
                "decision": decision.model_dump(mode="json"),
                "decision_type": type(decision).__name__,
            }
        if isinstance(decision, Block):
            output, outcome = ToolOutput.error(decision.reason), "blocked"
        elif isinstance(decision, ShortCircuit):
            output, outcome = decision.output, "short_circuit"
        else:
            observers = self.agent.observers
            if observers:
                ctx = self._ctx("before_tool_execute", "", tool_call=call)
                reactions = await self._call_all(
                    "TOOL_OBSERVER",
                    [(pid, _bind(o, _with_plugin(ctx, pid))) for pid, o in observers],
                )
                self._collect("before_tool_execute", reactions, batch)
            output = await self._execute(call)
            outcome = "error" if output.is_error else "success"
            self._stage(batch, call.id, self.tool_owner.get(call.name), output.state)
        self._boundary_cancel_only()
        self.transcript.append(
            Message(
                id=new_id(),
                role="tool",
                content=output.content,
                tool_calls=None,
                tool_call_id=call.id,
                name=call.name,
                metadata={"is_error": True} if output.is_error else {},
            )
        )
        extra = await self._phase(_AFTER_TOOL, batch, tool_call=call, tool_output=output)
        for message in extra:
            self.transcript.append(message)
        self._emit_done(call, output, outcome)
        return None

    def _boundary_cancel_only(self) -> None:
        if self.cancel.cancelled:
            raise _End(Cancelled())

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

    # -- the run ---------------------------------------------------------------

    async def _step(self) -> EndCause | dict[str, Any] | None:
        """One step; returns an end cause, a parked-calls record, or ``None`` to go on."""
        self.step += 1
        self.step_usage = TokenUsage()
        self.step_delta = []
        if self.emit is not None:
            self.emit(
                StepStart(
                    seq=self._next_seq(), run_id=self.run_id, type="step_start", step=self.step
                )
            )
        await self._phase(_STEP_START)
        self._boundary()
        if _BEFORE_INFERENCE in self._hooks:
            await self._phase(_BEFORE_INFERENCE, request=self._base_request())
            self._boundary()
        request = self._request()
        response = await self._infer(request)
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
                tool_call_id=None,
                name=None,
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
        outcome: EndCause | dict[str, Any] | None = None
        if response.tool_calls:
            parked = []
            for call in response.tool_calls:
                record = await self._tool_call(call)
                if record is not None:
                    parked.append(record)
                self._boundary()
            if parked:
                return {"pending_calls": parked}
        else:
            self.final_text = response.text
            steer = await self._guards()
            if steer is None:
                outcome = NaturalEnd()
            else:
                message = steer.message
                self.transcript.append(
                    Message.user(message) if isinstance(message, str) else message
                )
        await self._phase(_STEP_END)
        await self._checkpoint()
        if self.emit is not None:
            self.emit(
                StepEnd(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    type="step_end",
                    step=self.step,
                    usage=self.step_usage,
                    state_delta=self.step_delta,
                )
            )
        self._boundary()
        if outcome is None and self.step >= self.config.max_steps:
            outcome = MaxSteps(max_steps=self.config.max_steps)
        return outcome

    async def run(self, input_messages: Sequence[Message]) -> RunState:
        """Execute the run to an end (or a park) and return its state."""
        snapshot = await self.store.load(self.binding)
        self.version = snapshot.version
        self.engine.data.update(snapshot.state)
        self.transcript = Transcript(snapshot.messages)
        if self.emit is not None:
            self.emit(
                RunStart(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    type="run_start",
                    thread_id=self.binding.thread_id,
                    agent_id=self.config.id,
                )
            )
        for message in input_messages:
            self.transcript.append(message)
        phase = Phase.ENDED
        cause: EndCause | None = None
        ticket: dict[str, Any] | None = None
        try:
            await self._phase(_RUN_START)
            await self._checkpoint()
            self._boundary()
            while True:
                outcome = await self._step()
                if isinstance(outcome, dict):
                    phase, ticket = Phase.WAITING, outcome
                    break
                if outcome is not None:
                    cause = outcome
                    break
        except _End as end:
            cause = end.cause
        except CapabilityBoundError as exc:
            cause = Error(
                failure=CapabilityBoundFailure(
                    plugin_id=exc.plugin_id, item=exc.item, message=str(exc)
                )
            )
        except Exception as exc:
            log.exception("internal error in run %s", self.run_id)
            cause = Error(failure=InternalFailure(message=f"{type(exc).__name__}: {exc}"))
        return await self._finish(phase, cause, ticket)

    async def _finish(
        self, phase: Phase, cause: EndCause | None, ticket: dict[str, Any] | None
    ) -> RunState:
        if phase is Phase.ENDED:
            # Work of the step in flight is not checkpointed: the thread keeps whole steps.
            self.transcript.rollback()
            self.pending = []
            try:
                await self._phase(_RUN_END)
            except _End as end:
                if not isinstance(cause, Error):
                    cause = end.cause
            except CapabilityBoundError as exc:
                if not isinstance(cause, Error):
                    cause = Error(
                        failure=CapabilityBoundFailure(
                            plugin_id=exc.plugin_id, item=exc.item, message=str(exc)
                        )
                    )
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
        await self._checkpoint(record)
        state = RunState(
            run_id=self.run_id,
            thread_id=self.binding.thread_id,
            agent_id=self.config.id,
            phase=phase,
            end_cause=cause,
            final_text=self.final_text if isinstance(cause, NaturalEnd) else "",
            steps=self.step,
            usage=self.usage,
            cost=self.cost,
            new_messages=self.persisted,
            log=list(self.engine.log),
            state=dict(self.engine.data),
            ticket=ticket,
        )
        if self.emit is not None:
            self.emit(
                RunFinish(
                    seq=self._next_seq(),
                    run_id=self.run_id,
                    type="run_finish",
                    phase=phase,
                    end_cause=cause,
                    ticket=ticket,
                    final_text=state.final_text,
                    usage=self.usage,
                    cost=self.cost,
                )
            )
        return state


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
