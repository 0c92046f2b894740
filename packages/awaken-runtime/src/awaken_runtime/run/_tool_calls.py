"""Tool calls and inference for one run: gates, execution, results, parking.

Tool calls of one response run in model order. Each call passes the tool
gates (strongest decision wins), the observers, the tool itself, and the
AFTER_TOOL hooks; its commands commit as one batch with its result. A call
that a gate or the tool suspends is parked instead and becomes a ticket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .._errors import ToolError
from ..lifecycle._events import TextDelta, ToolCallDone, ToolCallReady
from ..lifecycle._failures import Cancelled, ProviderFailure, ToolFailure
from ..messages._message import Message, ToolCall, new_id
from ..messages._transcript import KeepAll
from ..models._model import InferenceParams, InferenceRequest, InferenceResponse, StreamDelta
from ..plugins._context import (
    CONTEXT_MESSAGES,
    INFERENCE_PARAMS,
    REQUEST_WINDOW,
    TOOL_FILTER,
    visible_tools,
)
from ..plugins._gates import AwaitReason, Block, Schedule, ShortCircuit, Suspend
from ..plugins._plugin import PhaseHookPoint
from ..state._engine import Scope, StagedCommand
from ..suspension._suspension import SuspendCall
from ..tools._tool import ToolCallContext, ToolOutput, ignore_progress
from ._phases import End, PhaseRunner, bind, bind2, fail, log
from ._request import ReplacedContent
from ._stop import StopTracker

__all__ = ["Outcome", "ToolCallRunner"]

Outcome = Literal["success", "error", "blocked", "short_circuit", "suspended"]
_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL
_RUN = Scope.RUN
_FILTER_SLOT = (_RUN, TOOL_FILTER)
_CONTEXT_SLOT = (_RUN, CONTEXT_MESSAGES)
_WINDOW_SLOT = (_RUN, REQUEST_WINDOW)
_PARAMS_SLOT = (_RUN, INFERENCE_PARAMS)


@dataclass(slots=True)
class _Parked:
    """A call waiting for a decision, before it becomes a ticket."""

    call: ToolCall
    reason: AwaitReason
    payload: dict[str, Any]
    deadline: datetime | None = None
    not_before: datetime | None = None


class ToolCallRunner(PhaseRunner):
    """Inference and tool-call handling; ``AgentLoop`` adds steps and run legs."""

    _parked: list[_Parked]
    _stop: StopTracker | None = None

    _held: list[Message]
    _gate_owner: str | None = None
    delegation_tool_id: str = "agent_run"
    parallel_limit: int = 1
    """How many delegation calls of one response may run at once (1: sequential)."""

    def _release_held(self) -> None:
        """Append the AFTER_TOOL messages held back while the step's calls ran."""
        for message in self._held:
            self.transcript.append(message)
        self._held = []

    # -- inference -------------------------------------------------------------

    def _base_request(self) -> InferenceRequest:
        """The request as it would be without any context entries or tool filters."""
        window = self.transcript.window(self._policy)
        return InferenceRequest(
            model=self._model,
            messages=self.assembler.messages(window, self.transcript.last_user_index, []),
            tools=self._all_descriptors,
            params=self._params,
            run_id=self.run_id,
            step=self.step,
        )

    def _override(self, override: dict[str, Any] | None) -> InferenceParams:
        if not override:
            return self._params
        return InferenceParams.model_validate({**self._params.model_dump(), **override})

    def _request(self) -> InferenceRequest:
        data = self.engine.data  # plain dict reads: this runs every step
        raw_context = data.get(_CONTEXT_SLOT)
        filters = data.get(_FILTER_SLOT)
        override = data.get(_WINDOW_SLOT)
        params = data.get(_PARAMS_SLOT)
        transcript = self.transcript
        if override is None and raw_context is None and isinstance(self._policy, KeepAll):
            # The common case: the whole transcript after the system prompt.
            messages: Sequence[Message] = transcript.headed(self.assembler.head)
        else:
            if not isinstance(override, dict):
                override = {}
            entries = self.assembler.entries(raw_context, self.step) if raw_context else []
            after = override.get("start_after_message_id")
            window = transcript.window(self._policy, after)
            messages = self.assembler.messages(window, transcript.last_user_index, entries)
            replace = override.get("replace_content")
            if replace and isinstance(replace, dict):
                messages = ReplacedContent(messages, replace)
        if filters:
            ids = visible_tools(self.tools, filters)
            self.visible = set(ids)
            tools = [self.tools[i].descriptor for i in ids]
        else:
            self.visible = None
            tools = self._all_descriptors
        return InferenceRequest(
            self._model,
            messages,
            tools,
            self._override(params) if params else self._params,
            self.run_id,
            self.step,
        )

    async def _infer(self, request: InferenceRequest) -> InferenceResponse:
        response: InferenceResponse | None = None
        emit = self.emit
        model = self._model
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
        results = await self._call_all(
            "TOOL_GATE",
            [
                (pid, bind2(gate, self._ctx("tool_gate", pid, tool_call=call), call))
                for pid, gate in gates
            ],
        )
        best: Block | Suspend | ShortCircuit | Schedule | None = None
        self._gate_owner = None
        for pid, decision in results:
            if decision is None:
                continue
            if decision.effects:
                self._stage_effects(pid, decision.effects, tool=False)
            if best is None or decision.rank > best.rank:
                best, self._gate_owner = decision, pid
        return best

    async def _run_calls(self, calls: list[ToolCall]) -> None:
        """Run one response's calls: in model order, or as a parallel delegation batch."""
        if len(calls) == 1:  # the usual response: no batch to plan
            await self._tool_call(calls[0])
            self._boundary()
            return
        batchable = self.parallel_limit > 1 and all(
            c.name == self.delegation_tool_id for c in calls
        )
        if batchable and await self._parallel_batch(calls):
            return
        for call in calls:
            await self._tool_call(call)
            self._boundary()

    async def _parallel_batch(self, calls: list[ToolCall]) -> bool:
        """Run delegation calls concurrently if every gate allows all of them.

        Results are published together, in model order, after their state
        commands were validated as one batch. Returns ``False`` (having
        changed nothing) when a gate objects: the calls then run one by one.
        """
        mark = len(self._effects)
        for call in calls:
            if await self._gate(call) is not None:
                del self._effects[mark:]
                return False
        for call in calls:
            self._emit_ready(call)
        batch: list[StagedCommand] = []
        if self.agent.observers:
            for call in calls:
                await self._observe(call, batch)
        limit = asyncio.Semaphore(self.parallel_limit)

        async def one(call: ToolCall) -> ToolOutput:
            async with limit:
                return await self._execute(call, arm=False)

        try:
            results = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
        except asyncio.CancelledError:
            raise self._interrupted() from None
        done: list[tuple[ToolCall, ToolOutput]] = []
        for call, result in zip(calls, results, strict=True):
            if isinstance(result, SuspendCall):
                self._park(_Parked(call, result.await_reason, result.payload, result.deadline))
            elif isinstance(result, ToolError):
                raise fail(ToolFailure(tool_id=call.name, call_id=call.id, message=str(result)))
            elif isinstance(result, BaseException):
                raise result
            else:
                self._stage(batch, call.id, self.tool_owner.get(call.name), result.state)
                done.append((call, result))
        self._commit("after_tool_batch", batch)
        for call, output in done:
            await self._record(call, output, "error" if output.is_error else "success", [])
        return True

    async def _observe(self, call: ToolCall, batch: list[StagedCommand]) -> None:
        """BeforeToolExecute: tool observers see a call that will run; stage what they return."""
        observers = self.agent.observers
        label = "before_tool_execute"
        reactions = await self._call_all(
            "TOOL_OBSERVER",
            [(pid, bind(o, self._ctx(label, pid, tool_call=call))) for pid, o in observers],
        )
        self._collect(label, reactions, batch)

    def _emit_ready(self, call: ToolCall) -> None:
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

    async def _execute(self, call: ToolCall, *, arm: bool = True) -> ToolOutput:
        name = call.name
        tool = self.tools[name]
        if call.parse_error is not None:
            return ToolOutput.error(f"Invalid arguments for tool '{name}': {call.parse_error}")
        binding = self.binding
        # Positional (in field order): a keyword call costs twice as much, every call.
        ctx = ToolCallContext(
            self.engine.store,
            self.run_id,
            binding.thread_id,
            call.id,
            name,
            self.cancel,
            ignore_progress,
            binding.profile_id,
            binding.namespace,
            self.children,
            self._decision,
        )
        token = self.cancel
        if arm:
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
            if arm:
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

    async def _decided(
        self,
        call: ToolCall,
        decision: Block | Suspend | ShortCircuit | Schedule,
        batch: list[StagedCommand],
    ) -> None:
        """Apply a gate's decision: park the call, block it, or record its short circuit."""
        if isinstance(decision, Suspend):
            self._park(_Parked(call, decision.await_reason, dict(decision.payload)))
        elif isinstance(decision, Schedule):
            self._park(
                _Parked(
                    call,
                    AwaitReason.SCHEDULED_ACTION,
                    {"at": decision.at.isoformat()},
                    not_before=decision.at,
                )
            )
        elif isinstance(decision, Block):
            await self._record(call, ToolOutput.error(decision.reason), "blocked", batch)
        else:
            owner = self._gate_owner
            self._stage(batch, owner or call.id, owner, decision.output.state)
            if decision.output.effects:
                self._stage_effects(owner or call.name, decision.output.effects, tool=False)
            await self._record(call, decision.output, "short_circuit", batch)

    async def _tool_call(self, call: ToolCall, *, approved: bool = False) -> None:
        """Gate, execute and record one call, or park it."""
        if self.emit is not None:
            self._emit_ready(call)
        batch: list[StagedCommand] = []
        # No gate, a known and visible tool: nothing to decide (and no coroutine for it).
        if self.agent.gates or call.name not in self.tools or self.visible is not None:
            decision = await self._gate(call)
            if approved and isinstance(decision, (Suspend, Schedule)):
                decision = None  # a human approved this call: gates may still block it
            if decision is not None:
                await self._decided(call, decision, batch)
                return
        if self.agent.observers:  # checked here: no coroutine per call without observers
            await self._observe(call, batch)
        try:
            output = await self._execute(call)
        except ToolError as exc:
            raise fail(ToolFailure(tool_id=call.name, call_id=call.id, message=str(exc))) from exc
        except SuspendCall as signal:
            if approved and signal.await_reason is AwaitReason.TOOL_PERMISSION:
                # Approval was given: asking again would park this call forever.
                output = ToolOutput.error(
                    f"Tool '{call.name}' asked for permission again after it was approved; "
                    f"a tool should read ctx.decision instead of suspending twice"
                )
                await self._record(call, output, "error", batch)
                return
            self._commit("before_tool_execute", batch)
            self._park(_Parked(call, signal.await_reason, signal.payload, signal.deadline))
            return
        if output.state:
            self._stage(batch, call.id, self.tool_owner.get(call.name), output.state)
        if output.effects:
            self._stage_effects(call.name, output.effects, tool=True)
        await self._record(call, output, "error" if output.is_error else "success", batch)

    async def _record(
        self, call: ToolCall, output: ToolOutput, outcome: Outcome, batch: list[StagedCommand]
    ) -> None:
        """Append the tool result, run AFTER_TOOL hooks and commit the call's batch."""
        if self.cancel.cancelled:
            raise End(Cancelled())
        content, is_error = output.content, output.is_error
        self.transcript.append(
            Message(
                id=new_id(),
                role="tool",
                content=content,
                tool_call_id=call.id,
                name=call.name,
                metadata={"is_error": True} if is_error else {},
            )
        )
        if batch or not self._idle(_AFTER_TOOL):
            extra = await self._phase(_AFTER_TOOL, batch, tool_call=call, tool_output=output)
            # Tool results of one response must stay contiguous: hook messages wait.
            self._held.extend(extra)
        if self._stop is not None:
            self._stop.on_tool(call, is_error)
        if self.emit is not None:
            self._emit_done(call, content, outcome)

    def _park(self, parked: _Parked) -> None:
        self._parked.append(parked)
        self._emit_done(parked.call, "", "suspended")
