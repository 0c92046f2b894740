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
from typing import TYPE_CHECKING, Any

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
from ._calls_outcome import CallsOutcome, Outcome, Parked
from ._deps import RunDeps
from ._dispatch import Producer, start_all
from ._leg import LegState
from ._phases import PhaseEngine
from ._signals import End, fail, interrupted, log

# Gate decisions load with the first one: a run whose calls pass ungated never needs them;
# the event classes with the first event (see _lazy.py).
if TYPE_CHECKING:
    from ..lifecycle import _events as events
    from ..plugins import _gates as decisions
    from ..plugins._gates import Block, Schedule, ShortCircuit, Suspend

    Decided = Block | Suspend | ShortCircuit | Schedule
    Verdict = tuple[str | None, Decided]  # the deciding plugin (None: the runtime), its decision
else:
    events = LazyModule("awaken_runtime.lifecycle._events")
    decisions = LazyModule("awaken_runtime.plugins._gates")

__all__ = ["ToolCallExecutor"]

_AFTER_TOOL = PhaseHookPoint.AFTER_TOOL


class ToolCallExecutor:
    """Runs one response's tool calls against the run's tools, gates and observers."""

    __slots__ = ("deps", "leg", "phases")

    def __init__(self, deps: RunDeps, leg: LegState, phases: PhaseEngine) -> None:
        self.deps = deps
        self.leg = leg
        self.phases = phases

    # -- events ----------------------------------------------------------------

    def _emit_ready(self, call: ToolCall) -> None:
        deps = self.deps
        leg = self.leg
        if deps.emit is not None:
            deps.emit(
                events.ToolCallReady(
                    seq=leg.next_seq(),
                    run_id=deps.run_id,
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                )
            )

    def _emit_done(self, call: ToolCall, content: str, outcome: Outcome) -> None:
        deps = self.deps
        leg = self.leg
        if deps.emit is not None:
            deps.emit(
                events.ToolCallDone(
                    seq=leg.next_seq(),
                    run_id=deps.run_id,
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
        deps = self.deps
        leg = self.leg
        tool = deps.tools.get(call.name)
        coerce = getattr(tool, "coerce_arguments", None)
        if coerce is None or call.parse_error is not None:
            return call
        if leg.visible is not None and call.name not in leg.visible:
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

    async def gate(self, call: ToolCall) -> Verdict | None:
        """The strongest gate decision on ``call`` and the plugin that made it (``None``:
        the runtime, which blocks unknown or hidden tools); ``None``: the call may run."""
        deps = self.deps
        leg = self.leg
        known = call.name in deps.tools
        if not known or (leg.visible is not None and call.name not in leg.visible):
            if known:
                why = f"Tool '{call.name}' is not available at this step."
            else:
                names = ", ".join(sorted(leg.visible or deps.tools)) or "none"
                why = f"Unknown tool '{call.name}'. Available tools: {names}."
            return None, decisions.Block(reason=why)
        gates = deps.gates
        if not gates:
            return None
        context = self.phases.hook_context
        calls: list[Producer] = [
            (pid, partial(gate, context("tool_gate", pid, None, None, call)), call)
            for pid, gate in gates
        ]
        results = start_all("TOOL_GATE", calls)
        if not isinstance(results, list):  # a gate suspended: the rest run concurrently
            results = await results
        return decisions.winner(results)

    async def _decided(
        self, call: ToolCall, verdict: Verdict, batch: list[StagedCommand], done: CallsOutcome
    ) -> None:
        """Apply a gate's decision: park the call, block it, or record its short circuit.

        Only the decision applied contributes effects: a losing one, or a Suspend
        an approval overrode, never happened.
        """
        owner, decision = verdict
        if decision.effects:
            self.phases.stage_effects(owner or call.name, decision.effects, tool=False)
        if isinstance(decision, decisions.Suspend):
            self.park(Parked(call, decision.await_reason, dict(decision.payload)), done)
        elif isinstance(decision, decisions.Schedule):
            at = decision.at
            self.park(
                Parked(call, AwaitReason.SCHEDULED_ACTION, {"at": at.isoformat()}, None, at), done
            )
        elif isinstance(decision, decisions.Block):
            await self.record(call, ToolOutput.error(decision.reason), "blocked", batch, done)
        else:
            self.phases.stage(batch, owner or call.id, owner, decision.output.state)
            if decision.output.effects:
                self.phases.stage_effects(owner or call.name, decision.output.effects, tool=False)
            await self.record(call, decision.output, "short_circuit", batch, done)

    async def _observe(self, call: ToolCall, batch: list[StagedCommand]) -> None:
        """BeforeToolExecute: tool observers see a call that will run; stage what they return."""
        phases = self.phases
        label = "before_tool_execute"
        reactions = await phases.call_all(
            "TOOL_OBSERVER", phases.hook_calls(label, self.deps.observers, tool_call=call)
        )
        phases.collect(label, reactions, batch)

    # -- running -----------------------------------------------------------------

    async def run_calls(self, calls: list[ToolCall]) -> CallsOutcome:
        """Run one response's calls: in model order, or as a parallel delegation batch.

        Returns what they produced: each call's result, the calls parked, the
        AFTER_TOOL messages held back. Call ids must be unique (the loop keeps
        them so, ``kept_calls``): a repeated id ends the run before any call runs.
        """
        done = CallsOutcome()
        boundary = self.phases.boundary
        if len(calls) == 1:  # the usual response: no batch to plan
            await self.call(calls[0], done)
            boundary()
            return done
        _check_unique(calls)
        deps = self.deps
        batchable = deps.parallel_limit > 1 and all(
            c.name == deps.delegation_tool_id for c in calls
        )
        if batchable and await self._parallel_batch(calls, done):
            return done
        for call in calls:
            await self.call(call, done)
            boundary()
        return done

    async def _parallel_batch(self, calls: list[ToolCall], done: CallsOutcome) -> bool:
        """Run delegation calls concurrently if every gate allows all of them.

        Results are published together, in model order, after their state
        commands were validated as one batch. Returns ``False`` (having
        changed nothing) when a gate objects: the calls then run one by one.
        """
        deps = self.deps
        leg = self.leg
        mark = len(leg.effects)
        if deps.gates or deps.observers:
            coerced = [self.coerce(c) for c in calls]
            if not all(isinstance(c, ToolCall) for c in coerced):
                return False  # one by one, each invalid call becomes its error
            calls = [c for c in coerced if isinstance(c, ToolCall)]
        for call in calls:
            if await self.gate(call) is not None:  # a decision: each call gets its own
                del leg.effects[mark:]
                return False
        for call in calls:
            self._emit_ready(call)
        batch: list[StagedCommand] = []
        if deps.observers:
            for call in calls:
                await self._observe(call, batch)
        lease = deps.lease
        if lease is not None and _clock() >= lease.check_at:
            await self.phases.hold()  # before any of the batch runs
        limit = asyncio.Semaphore(deps.parallel_limit)

        async def one(call: ToolCall) -> ToolOutput:
            async with limit:
                return await self.execute(call, arm=False)

        try:
            results = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
        except asyncio.CancelledError:
            raise interrupted(leg.cancel) from None
        ran: list[tuple[ToolCall, ToolOutput]] = []
        for call, result in zip(calls, results, strict=True):
            if isinstance(result, SuspendCall):
                self.park(Parked(call, result.await_reason, result.payload, result.deadline), done)
            elif isinstance(result, ToolError):
                raise fail(ToolFailure(tool_id=call.name, call_id=call.id, message=str(result)))
            elif isinstance(result, BaseException):
                raise result
            else:
                self.phases.stage(batch, call.id, deps.tool_owner.get(call.name), result.state)
                ran.append((call, result))
        self.phases.commit("after_tool_batch", batch)
        for call, output in ran:
            await self.record(call, output, "error" if output.is_error else "success", [], done)
        return True

    async def execute(self, call: ToolCall, *, arm: bool = True) -> ToolOutput:
        """Call the tool; its exceptions (but ToolError, SuspendCall) become error results."""
        deps = self.deps
        leg = self.leg
        name = call.name
        tool = deps.tools[name]
        if call.parse_error is not None:
            return ToolOutput.error(f"Invalid arguments for tool '{name}': {call.parse_error}")
        lease = deps.lease
        if lease is not None and _clock() >= lease.check_at:
            await self.phases.hold()  # a run that lost its thread executes nothing more
        binding = deps.binding
        token = leg.cancel
        # Positional (in field order): a keyword call costs twice as much, every call.
        tool_ctx = ToolCallContext(
            leg.engine.store,
            deps.run_id,
            binding.thread_id,
            call.id,
            name,
            token,
            ignore_progress,
            binding.profile_id,
            binding.namespace,
            deps.children,
            leg.decision,
        )
        observation = leg.observation
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

    async def call(self, call: ToolCall, done: CallsOutcome, *, approved: bool = False) -> None:
        """Coerce, gate, execute and record one call, or park it (into ``done``)."""
        deps = self.deps
        gates, observers = deps.gates, deps.observers
        batch: list[StagedCommand] = []
        if gates or observers:  # without them the tool validates on its own
            coerced = self.coerce(call)
            if isinstance(coerced, ToolOutput):
                if deps.emit is not None:
                    self._emit_ready(call)
                await self.record(call, coerced, "error", batch, done)
                return
            call = coerced
        if deps.emit is not None:
            self._emit_ready(call)
        # No gate, a known and visible tool: nothing to decide (and no coroutine for it).
        if gates or call.name not in deps.tools or self.leg.visible is not None:
            verdict = await self.gate(call)
            if approved and verdict is not None and isinstance(verdict[1], _waits()):
                verdict = None  # a human approved this call: gates may still block it
            if verdict is not None:
                await self._decided(call, verdict, batch, done)
                return
        if observers:  # checked here: no coroutine per call without observers
            await self._observe(call, batch)
        await self._run(call, done, batch, approved)

    async def _run(
        self, call: ToolCall, done: CallsOutcome, batch: list[StagedCommand], approved: bool
    ) -> None:
        """Execute a call that passed its gates; record its result or park it."""
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
                await self.record(call, output, "error", batch, done)
                return
            self.phases.commit("before_tool_execute", batch)
            self.park(Parked(call, signal.await_reason, signal.payload, signal.deadline), done)
            return
        if output.state:
            self.phases.stage(batch, call.id, self.deps.tool_owner.get(call.name), output.state)
        if output.effects:
            self.phases.stage_effects(call.name, output.effects, tool=True)
        await self.record(call, output, "error" if output.is_error else "success", batch, done)

    async def record(
        self,
        call: ToolCall,
        output: ToolOutput,
        outcome: Outcome,
        batch: list[StagedCommand],
        done: CallsOutcome,
    ) -> None:
        """Append the tool result (and note it in ``done``), run AFTER_TOOL hooks and commit
        the call's batch."""
        deps = self.deps
        leg = self.leg
        if leg.cancel.cancelled:
            raise End(Cancelled())
        # A tool's text may hold lone surrogates (os.listdir of non-UTF-8 names): replaced.
        content, is_error = scrub_text(output.content), output.is_error
        leg.transcript.append(
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
            if extra:
                done.held.extend(extra)
        done.results.append((call, output, outcome))
        if leg.stop is not None:
            leg.stop.on_tool(call, is_error)
        if deps.emit is not None:
            self._emit_done(call, content, outcome)

    def park(self, parked: Parked, done: CallsOutcome) -> None:
        """Hold ``parked`` for a decision (in ``done``); it becomes a ticket when the step
        parks."""
        done.parked.append(parked)
        self._emit_done(parked.call, "", "suspended")


def _waits() -> tuple[type, ...]:
    """The decisions an approval lifts: it answered the question they ask."""
    return (decisions.Suspend, decisions.Schedule)


def _check_unique(calls: list[ToolCall]) -> None:
    """End the run, before any call runs, if two of one response's calls share an id."""
    seen: set[str] = set()
    for call in calls:
        if call.id in seen:
            raise fail(
                ToolFailure(
                    tool_id=call.name,
                    call_id=call.id,
                    message=f"call id {call.id!r} repeats in one response; each call needs "
                    f"its own id (the loop renames a provider's repeats, see kept_calls)",
                )
            )
        seen.add(call.id)


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
