"""The tool-call executor: coerce, gate, observe, execute, record, or park each call.

Tool calls of one response run in model order. A call's arguments are first
validated and coerced by its tool (``coerce_arguments``, which ``@tool``
tools have) when gates or observers will look at them, so a gate decides on
exactly the value the tool runs with (``"5000"`` is seen as ``5000``);
arguments that fail validation become the model-visible error without reaching
a gate. Each call then passes the tool
gates (strongest decision wins), the observers, the tool itself, and the
AFTER_TOOL hooks; its commands commit as one batch with its result. A call
that a gate or the tool suspends is parked instead and becomes a ticket. The
only parallel path is a batch made entirely of delegation calls that every
gate allowed.
"""

from __future__ import annotations

import asyncio
from functools import partial
from time import time as _clock
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ToolError
from .._lazy import LazyModule
from ..lifecycle._failures import Cancelled, ToolFailure
from ..messages._message import ContentPart, Message, ToolCall, new_id
from ..messages._unicode import scrub_text
from ..plugins._await import AwaitReason
from ..plugins._plugin import PhaseHookPoint
from ..state._engine import StagedCommand
from ..suspension._suspension import SuspendCall
from ..tools._tool import ToolCallContext, ToolOutput, ignore_progress
from ._dispatch import Producer, start_all
from ._phases import PhaseEngine
from ._run_context import Parked, RunContext
from ._signals import End, fail, interrupted, log

# Gate decisions load with the first one: a run whose calls pass ungated never needs them;
# the event classes with the first event (see _lazy.py).
if TYPE_CHECKING:
    from ..lifecycle import _events as events
    from ..plugins import _gates as decisions
    from ..plugins._gates import Block, Schedule, ShortCircuit, Suspend

    Decided = Block | Suspend | ShortCircuit | Schedule
else:
    events = LazyModule("awaken_runtime.lifecycle._events")
    decisions = LazyModule("awaken_runtime.plugins._gates")

__all__ = ["Outcome", "ToolCallExecutor"]

Outcome = Literal["success", "error", "blocked", "short_circuit", "suspended"]
_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL


class ToolCallExecutor:
    """Runs one response's tool calls against the run's tools, gates and observers."""

    __slots__ = ("ctx", "phases")

    def __init__(self, ctx: RunContext, phases: PhaseEngine) -> None:
        self.ctx = ctx
        self.phases = phases

    # -- events ----------------------------------------------------------------

    def _emit_ready(self, call: ToolCall) -> None:
        ctx = self.ctx
        if ctx.emit is not None:
            ctx.emit(
                events.ToolCallReady(
                    seq=ctx.next_seq(),
                    run_id=ctx.run_id,
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                )
            )

    def _emit_done(self, call: ToolCall, content: str, outcome: Outcome) -> None:
        ctx = self.ctx
        if ctx.emit is not None:
            ctx.emit(
                events.ToolCallDone(
                    seq=ctx.next_seq(),
                    run_id=ctx.run_id,
                    call_id=call.id,
                    output=content,
                    outcome=outcome,
                )
            )

    # -- deciding ----------------------------------------------------------------

    def coerce(self, call: ToolCall) -> ToolCall | ToolOutput:
        """``call`` with the arguments its tool will run with, or the error for invalid ones.

        Only a known, visible tool that offers ``coerce_arguments`` coerces; any
        other call is returned as it is (the gates then block unknown tools).
        """
        ctx = self.ctx
        tool = ctx.tools.get(call.name)
        coerce = getattr(tool, "coerce_arguments", None)
        if coerce is None or call.parse_error is not None:
            return call
        if ctx.visible is not None and call.name not in ctx.visible:
            return call
        try:
            arguments = coerce(call.arguments)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            explain = getattr(tool, "invalid_arguments", None)
            if explain is not None:
                return ToolOutput.error(explain(exc))
            return ToolOutput.error(f"Invalid arguments for tool '{call.name}': {exc}")
        if _unchanged(call.arguments, arguments):
            return call  # the usual case: the model already sent what the tool takes
        return call.model_copy(update={"arguments": arguments})

    async def gate(self, call: ToolCall) -> Decided | None:
        """The strongest gate decision on ``call``; unknown or hidden tools are blocked."""
        ctx = self.ctx
        known = call.name in ctx.tools
        if not known or (ctx.visible is not None and call.name not in ctx.visible):
            if known:
                return decisions.Block(reason=f"Tool '{call.name}' is not available at this step.")
            names = ", ".join(sorted(ctx.visible or ctx.tools)) or "none"
            return decisions.Block(reason=f"Unknown tool '{call.name}'. Available tools: {names}.")
        gates = ctx.agent.gates
        if not gates:
            return None
        calls: list[Producer] = [
            (pid, partial(gate, ctx.hook_context("tool_gate", pid, None, None, call)), call)
            for pid, gate in gates
        ]
        results = start_all("TOOL_GATE", calls)
        if not isinstance(results, list):  # a gate suspended: the rest run concurrently
            results = await results
        best = decisions.winner(results)
        if best is None:
            ctx.gate_owner = None
            return None
        ctx.gate_owner, decision = best
        return decision

    async def _decided(self, call: ToolCall, decision: Decided, batch: list[StagedCommand]) -> None:
        """Apply a gate's decision: park the call, block it, or record its short circuit.

        Only the decision applied contributes effects: a losing one, or a Suspend
        an approval overrode, never happened.
        """
        if decision.effects:
            self.phases.stage_effects(
                self.ctx.gate_owner or call.name, decision.effects, tool=False
            )
        if isinstance(decision, decisions.Suspend):
            self.park(Parked(call, decision.await_reason, dict(decision.payload)))
        elif isinstance(decision, decisions.Schedule):
            self.park(
                Parked(
                    call,
                    AwaitReason.SCHEDULED_ACTION,
                    {"at": decision.at.isoformat()},
                    not_before=decision.at,
                )
            )
        elif isinstance(decision, decisions.Block):
            await self.record(call, ToolOutput.error(decision.reason), "blocked", batch)
        else:
            owner = self.ctx.gate_owner
            self.phases.stage(batch, owner or call.id, owner, decision.output.state)
            if decision.output.effects:
                self.phases.stage_effects(owner or call.name, decision.output.effects, tool=False)
            await self.record(call, decision.output, "short_circuit", batch)

    async def _observe(self, call: ToolCall, batch: list[StagedCommand]) -> None:
        """BeforeToolExecute: tool observers see a call that will run; stage what they return."""
        ctx = self.ctx
        label = "before_tool_execute"
        reactions = await self.phases.call_all(
            "TOOL_OBSERVER", ctx.hook_calls(label, ctx.agent.observers, tool_call=call)
        )
        self.phases.collect(label, reactions, batch)

    # -- running -----------------------------------------------------------------

    async def run_calls(self, calls: list[ToolCall]) -> None:
        """Run one response's calls: in model order, or as a parallel delegation batch."""
        boundary = self.phases.boundary
        if len(calls) == 1:  # the usual response: no batch to plan
            await self.call(calls[0])
            boundary()
            return
        ctx = self.ctx
        batchable = ctx.parallel_limit > 1 and all(c.name == ctx.delegation_tool_id for c in calls)
        if batchable and await self._parallel_batch(calls):
            return
        for call in calls:
            await self.call(call)
            boundary()

    async def _parallel_batch(self, calls: list[ToolCall]) -> bool:
        """Run delegation calls concurrently if every gate allows all of them.

        Results are published together, in model order, after their state
        commands were validated as one batch. Returns ``False`` (having
        changed nothing) when a gate objects: the calls then run one by one.
        """
        ctx = self.ctx
        mark = len(ctx.effects)
        if ctx.agent.gates or ctx.agent.observers:
            coerced = [self.coerce(c) for c in calls]
            if not all(isinstance(c, ToolCall) for c in coerced):
                return False  # one by one, each invalid call becomes its error
            calls = [c for c in coerced if isinstance(c, ToolCall)]
        for call in calls:
            if await self.gate(call) is not None:
                del ctx.effects[mark:]
                return False
        for call in calls:
            self._emit_ready(call)
        batch: list[StagedCommand] = []
        if ctx.agent.observers:
            for call in calls:
                await self._observe(call, batch)
        lease = ctx.lease
        if lease is not None and _clock() >= lease.check_at:
            await self.phases.hold()  # before any of the batch runs
        limit = asyncio.Semaphore(ctx.parallel_limit)

        async def one(call: ToolCall) -> ToolOutput:
            async with limit:
                return await self.execute(call, arm=False)

        try:
            results = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
        except asyncio.CancelledError:
            raise interrupted(ctx.cancel) from None
        done: list[tuple[ToolCall, ToolOutput]] = []
        for call, result in zip(calls, results, strict=True):
            if isinstance(result, SuspendCall):
                self.park(Parked(call, result.await_reason, result.payload, result.deadline))
            elif isinstance(result, ToolError):
                raise fail(ToolFailure(tool_id=call.name, call_id=call.id, message=str(result)))
            elif isinstance(result, BaseException):
                raise result
            else:
                self.phases.stage(batch, call.id, ctx.tool_owner.get(call.name), result.state)
                done.append((call, result))
        self.phases.commit("after_tool_batch", batch)
        for call, output in done:
            await self.record(call, output, "error" if output.is_error else "success", [])
        return True

    async def execute(self, call: ToolCall, *, arm: bool = True) -> ToolOutput:
        """Call the tool; its exceptions (but ToolError, SuspendCall) become error results."""
        ctx = self.ctx
        name = call.name
        tool = ctx.tools[name]
        if call.parse_error is not None:
            return ToolOutput.error(f"Invalid arguments for tool '{name}': {call.parse_error}")
        lease = ctx.lease
        if lease is not None and _clock() >= lease.check_at:
            await self.phases.hold()  # a run that lost its thread executes nothing more
        binding = ctx.binding
        token = ctx.cancel
        # Positional (in field order): a keyword call costs twice as much, every call.
        tool_ctx = ToolCallContext(
            ctx.engine.store,
            ctx.run_id,
            binding.thread_id,
            call.id,
            name,
            token,
            ignore_progress,
            binding.profile_id,
            binding.namespace,
            ctx.children,
            ctx.decision,
        )
        observation = ctx.observation
        seen = observation.start_tool(call) if observation is not None else None
        if arm:
            token.arm()
        try:
            output = await tool.call(call.arguments, tool_ctx)
        except (ToolError, SuspendCall) as exc:
            if seen is not None:
                seen.end(None, exc)
            raise
        except asyncio.CancelledError as exc:
            if seen is not None:
                seen.end(None, exc)
            raise interrupted(token) from None
        except Exception as exc:
            log.exception("tool %r raised (call %s)", call.name, call.id)
            if seen is not None:
                seen.end(None, exc)
            return ToolOutput.error(f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}")
        finally:
            if arm:
                token.disarm()
        if not isinstance(output, ToolOutput):
            why = f"returned {type(output).__name__}; tools must return a ToolOutput"
            if seen is not None:
                seen.end(None, TypeError(why))
            raise fail(ToolFailure(tool_id=call.name, call_id=call.id, message=why))
        if seen is not None:
            seen.end(output)
        return output

    async def call(self, call: ToolCall, *, approved: bool = False) -> None:
        """Coerce, gate, execute and record one call, or park it."""
        ctx = self.ctx
        agent = ctx.agent
        batch: list[StagedCommand] = []
        if agent.gates or agent.observers:  # without them the tool validates on its own
            coerced = self.coerce(call)
            if isinstance(coerced, ToolOutput):
                if ctx.emit is not None:
                    self._emit_ready(call)
                await self.record(call, coerced, "error", batch)
                return
            call = coerced
        if ctx.emit is not None:
            self._emit_ready(call)
        # No gate, a known and visible tool: nothing to decide (and no coroutine for it).
        if agent.gates or call.name not in ctx.tools or ctx.visible is not None:
            decision = await self.gate(call)
            if approved and isinstance(decision, (decisions.Suspend, decisions.Schedule)):
                decision = None  # a human approved this call: gates may still block it
            if decision is not None:
                await self._decided(call, decision, batch)
                return
        if agent.observers:  # checked here: no coroutine per call without observers
            await self._observe(call, batch)
        try:
            output = await self.execute(call)
        except ToolError as exc:
            raise fail(ToolFailure(tool_id=call.name, call_id=call.id, message=str(exc))) from exc
        except SuspendCall as signal:
            if approved and signal.await_reason is AwaitReason.TOOL_PERMISSION:
                # Approval was given: asking again would park this call forever.
                output = ToolOutput.error(
                    f"Tool '{call.name}' asked for permission again after it was approved; "
                    f"a tool should read ctx.decision instead of suspending twice"
                )
                await self.record(call, output, "error", batch)
                return
            self.phases.commit("before_tool_execute", batch)
            self.park(Parked(call, signal.await_reason, signal.payload, signal.deadline))
            return
        if output.state:
            self.phases.stage(batch, call.id, ctx.tool_owner.get(call.name), output.state)
        if output.effects:
            self.phases.stage_effects(call.name, output.effects, tool=True)
        await self.record(call, output, "error" if output.is_error else "success", batch)

    async def record(
        self, call: ToolCall, output: ToolOutput, outcome: Outcome, batch: list[StagedCommand]
    ) -> None:
        """Append the tool result, run AFTER_TOOL hooks and commit the call's batch."""
        ctx = self.ctx
        if ctx.cancel.cancelled:
            raise End(Cancelled())
        # A tool's text may hold lone surrogates (os.listdir of non-UTF-8 names): replaced.
        content, is_error = scrub_text(output.content), output.is_error
        ctx.transcript.append(
            Message(
                id=new_id(),
                role="tool",
                # No empty leading text block: a tool may answer with parts only.
                content=[
                    *([ContentPart(type="text", text=content)] if content else ()),
                    *output.parts,
                ]
                if output.parts
                else content,
                tool_call_id=call.id,
                name=call.name,
                metadata={"is_error": True} if is_error else {},
            )
        )
        phases = self.phases
        if batch or not phases.idle(_AFTER_TOOL):
            extra = await phases.phase(_AFTER_TOOL, batch, tool_call=call, tool_output=output)
            # Tool results of one response must stay contiguous: hook messages wait.
            ctx.held.extend(extra)
        if ctx.stop is not None:
            ctx.stop.on_tool(call, is_error)
        if ctx.emit is not None:
            self._emit_done(call, content, outcome)

    def park(self, parked: Parked) -> None:
        """Hold ``parked`` for a decision; it becomes a ticket when the step parks."""
        self.ctx.parked.append(parked)
        self._emit_done(parked.call, "", "suspended")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _unchanged(sent: dict[str, Any], coerced: dict[str, Any]) -> bool:
    """Whether coercion left ``sent`` as it was: the same keys, each value of the same
    scalar type and equal (``1 == True`` and ``1 == 1.0``, so the types must match too)."""
    if len(sent) != len(coerced):
        return False
    for key, value in coerced.items():
        old = sent.get(key, _SCALARS)
        if old is value:
            continue
        kind = type(value)
        if kind is not type(old) or kind not in _SCALARS or old != value:
            return False
    return True
