"""Resuming a parked run: restore its step, claim the decided tickets, apply the decisions.

A resumed leg rebuilds the run from the store alone (so it works in a new
process), takes the decided tickets out of the stored record before anything
runs (the claim), checkpoints each decided call at once, and continues the
parked step through the same ``AgentLoop`` once no call waits.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_core import to_json

from .._errors import CapabilityBoundError, VersionConflict
from ..lifecycle._failures import Cancelled
from ..lifecycle._run_state import RunState
from ..messages._message import ToolCall, new_id, with_depth_limit
from ..plugins._await import AwaitReason
from ..state._engine import Scope
from ..stores._thread_store import ThreadSnapshot
from ..suspension._decisions import Approve, Decision, Deny, Replay, Respond
from ..suspension._suspension import (
    ANSWER_TO_TOOL,
    ParkedRun,
    ResumeRejected,
    ResumeTicket,
    SuspendCall,
)
from ..tools._tool import ToolOutput
from ._calls_outcome import CallsOutcome, Parked
from ._ending import bound_failure
from ._loop import AgentLoop
from ._parking import close_open_calls, open_calls, parked_record, ticket_parked_calls
from ._signals import End, abandoned, lease_lost

__all__ = ["Resumer"]

_RUN = Scope.RUN


class Resumer:
    """Continues (or cancels) a parked run through its ``AgentLoop``.

    ``done`` gathers what the decided calls produce over the whole leg (parked
    calls are ticketed and dropped from it after each decision); it starts with
    the AFTER_TOOL messages the parked step held back.
    """

    __slots__ = ("done", "loop")

    def __init__(self, loop: AgentLoop) -> None:
        self.loop = loop
        self.done = CallsOutcome()

    def restore(self, snapshot: ThreadSnapshot, parked: ParkedRun) -> None:
        """Rebuild the run's state from the store for a resumed leg."""
        leg = self.loop.leg
        self.loop.open_leg(snapshot, resumed=True)
        self.done = CallsOutcome(parked.held_messages)
        leg.engine.data.update({(_RUN, k): v for k, v in parked.run_state})
        leg.step = parked.step
        leg.seq = parked.seq  # the parked leg's RunFinish had this seq
        leg.usage = parked.usage
        leg.cost = parked.cost
        # An open call without a pending ticket was claimed by a resume that died.
        waiting = {t.call.id for t in parked.tickets}
        leg.orphans = frozenset(c.id for c in open_calls(leg) if c.id not in waiting)

    async def claim(self, parked: ParkedRun, ticket_ids: Sequence[str]) -> None:
        """Take the decided tickets out of the stored record before anything runs.

        ``parked`` must come from the snapshot ``restore`` was given: the claim
        commits at that snapshot's version, so of two resumers that checked the
        same tickets only one commits; the other gets ``ResumeRejected``
        before it executes anything, so no call runs twice.
        """
        claimed = set(ticket_ids)
        kept = [t for t in parked.tickets if t.ticket_id not in claimed]
        loop = self.loop
        record = parked_record(loop.deps, loop.leg, parked.snapshot_id, kept, self.done.held)
        try:
            await self.loop.phases.checkpoint(parked=record, force=True)
        except VersionConflict as exc:
            raise ResumeRejected(
                f"another resume or run changed thread {self.loop.deps.binding.thread_id!r} "
                f"after these tickets were checked (it claimed them first): {exc}"
            ) from exc

    async def resume(
        self, parked: ParkedRun, decisions: Sequence[tuple[ResumeTicket, Decision]]
    ) -> RunState:
        """Apply decisions to their parked calls; continue the step once none wait."""
        loop = self.loop
        deps = loop.deps
        leg = loop.leg
        done = self.done
        decided = {ticket.ticket_id for ticket, _ in decisions}
        kept = [t for t in parked.tickets if t.ticket_id not in decided]
        loop.start_event("resume", [ticket for ticket, _ in decisions])
        try:
            for ticket, decision in decisions:
                await self._apply(ticket, decision)
                # Each decided call is checkpointed at once, so it is never lost or
                # redone, whatever happens to the rest of this leg.
                snapshot_id = new_id("snap_")
                kept = [*kept, *ticket_parked_calls(deps, leg, done.parked, snapshot_id)]
                done.parked = []
                # Until the step ends the thread stays parked (busy), even with no tickets.
                record = parked_record(deps, leg, snapshot_id, kept, done.held)
                await loop.phases.checkpoint(parked=record, force=True)
                loop.phases.boundary()
        except End as end:
            return await loop.finish(end.cause)
        except CapabilityBoundError as exc:
            return await loop.finish(bound_failure(exc))
        except VersionConflict as exc:
            return await loop.finish(lease_lost(deps.binding.thread_id, str(exc)))
        if done.parked or kept:
            return await loop.park(done, kept)
        for message in done.held:  # the step's results are all in: they follow them
            leg.transcript.append(message)
        # A claimed call whose leg crashed earlier never got a result: answer it now.
        close_open_calls(leg, "its resume did not complete.")
        return await loop.drive(None, first=True)

    async def abandon(self, parked: ParkedRun) -> RunState:
        """End a run whose last resume died after claiming every ticket (no ticket left).

        Its claimed calls may have run: the model is told their outcome is
        unknown. The run ends ``Error(AbandonedFailure)``: its process stopped.
        """
        loop = self.loop
        deps = loop.deps
        loop.start_event("resume")
        return await loop.finish(
            abandoned(
                deps.binding.thread_id,
                f"the process resuming run {parked.run_id!r} stopped after claiming its "
                f"last decision(s) and before the run ended; the thread was recovered",
            )
        )

    async def _apply(self, ticket: ResumeTicket, decision: Decision) -> None:
        leg = self.loop.leg
        call = ticket.call
        leg.applying = call.id
        leg.decision, leg.ticket = decision, ticket
        try:
            await self._apply_decision(ticket, call, decision)
        finally:
            leg.decision = leg.ticket = None

    async def _apply_decision(
        self, ticket: ResumeTicket, call: ToolCall, decision: Decision
    ) -> None:
        calls, done = self.loop.calls, self.done
        children = self.loop.deps.children
        if ticket.await_reason is AwaitReason.DELEGATION and children is not None:
            # The decision is for the child's pending call: resume the child (observed
            # like the call's first execution, so the child's leg nests under it).
            observation = self.loop.leg.observation
            seen = observation.start_tool(call) if observation is not None else None
            try:
                outcome = await children.resume(ticket.payload, decision)
                output = outcome.to_output()
            except BaseException as exc:
                if seen is not None:
                    seen.end(None, exc)
                if not isinstance(exc, SuspendCall):
                    raise
                calls.park(Parked(call, exc.await_reason, exc.payload), done)
                return
            if seen is not None:
                seen.end(output)
            await calls.record(
                call, output, "success" if not output.is_error else "error", [], done
            )
        elif isinstance(decision, Approve) or (
            isinstance(decision, Respond) and ticket.payload.get(ANSWER_TO_TOOL) is True
        ):
            await calls.call(call, done, approved=True)
        elif isinstance(decision, Replay):
            replayed = call.model_copy(
                update={"arguments": decision.arguments, "parse_error": None, "raw_arguments": None}
            )
            await calls.call(with_depth_limit(replayed), done)
        elif isinstance(decision, Deny):
            output = ToolOutput.error(f"The call was denied: {decision.reason}")
            await calls.record(call, output, "blocked", [], done)
        elif isinstance(decision, Respond):
            value = decision.value
            content = value if isinstance(value, str) else to_json(value).decode()
            await calls.record(call, ToolOutput.ok(content), "success", [], done)
        else:  # the runtime validates decisions; this guards direct callers
            raise TypeError(f"not a decision: {decision!r}")

    async def cancel_parked(self, parked: ParkedRun) -> RunState:
        """End a waiting run as ``Cancelled``; its parked calls get error results."""
        loop = self.loop
        deps = loop.deps
        for ticket in parked.tickets:
            if ticket.await_reason is AwaitReason.DELEGATION and deps.cancel_child is not None:
                await deps.cancel_child(ticket.payload)
        loop.start_event("cancel", parked.tickets)
        return await loop.finish(Cancelled())
