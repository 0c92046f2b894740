"""What a parked step leaves in the store: tickets, the parked-run record, closed calls.

Pure functions of the ``RunContext``: the step loop uses them to park a step,
the resumer to checkpoint each decided call and to re-park what still waits.
"""

from __future__ import annotations

from ..lifecycle._failures import EndCause
from ..messages._message import Message, ToolCall, new_id
from ..state._engine import Scope
from ..suspension._suspension import ParkedRun, ResumeTicket
from ._run_context import RunContext

__all__ = [
    "UNKNOWN_OUTCOME",
    "close_open_calls",
    "open_calls",
    "parked_record",
    "ticket_parked_calls",
]

_RUN = Scope.RUN


def ticket_parked_calls(ctx: RunContext, snapshot_id: str) -> list[ResumeTicket]:
    """Turn the calls parked so far into tickets (and forget them as parked)."""
    tickets = []
    for parked in ctx.parked:
        ticket = ResumeTicket(
            ticket_id=new_id("tkt_"),
            run_id=ctx.run_id,
            thread_id=ctx.binding.thread_id,
            snapshot_id=snapshot_id,
            fingerprint=ctx.agent.snapshot.fingerprint,
            await_reason=parked.reason,
            call=parked.call,
            payload=parked.payload,
            deadline=parked.deadline,
            not_before=parked.not_before,
            trace=ctx.trace,
        )
        if ctx.ticket_secret is not None:
            ticket = ticket.signed(ctx.ticket_secret)
        tickets.append(ticket)
    ctx.parked = []
    return tickets


def parked_record(ctx: RunContext, snapshot_id: str, tickets: list[ResumeTicket]) -> ParkedRun:
    """The stored record of a parked run: where it stopped and which tickets wait."""
    binding = ctx.binding
    return ParkedRun(
        run_id=ctx.run_id,
        agent_id=ctx.config.id,
        fingerprint=ctx.agent.snapshot.fingerprint,
        snapshot_id=snapshot_id,
        thread_id=binding.thread_id,
        profile_id=binding.profile_id,
        namespace=binding.namespace,
        step=ctx.step,
        seq=ctx.seq + 1,
        usage=ctx.usage,
        cost=ctx.cost,
        run_state=[(k, v) for (s, k), v in ctx.engine.data.items() if s is _RUN],
        tickets=tickets,
        held_messages=list(ctx.held),
    )


UNKNOWN_OUTCOME = (
    "The outcome of the call is unknown: the process resuming it stopped before recording "
    "its result, so it may have run. Check before calling it again."
)
"""What the model is told about a call an earlier resume claimed and never answered."""


def open_calls(ctx: RunContext) -> list[ToolCall]:
    """The calls of the transcript's last tool-calling step that have no result yet."""
    answered = set()
    for message in reversed(ctx.transcript.view()):
        if message.role == "tool":
            answered.add(message.tool_call_id)
            continue
        if message.role == "assistant" and message.tool_calls:
            return [c for c in message.tool_calls if c.id not in answered]
        break
    return []


def close_open_calls(ctx: RunContext, why: EndCause | str) -> None:
    """Answer calls of a checkpointed, unfinished step so the thread stays valid.

    A call an earlier, dead resume claimed (``ctx.orphans``) may have run: the
    model is told its outcome is unknown, never that it did not run.
    """
    reason = why if isinstance(why, str) else f"the run ended ({why.kind})."
    for call in open_calls(ctx):
        if call.id in ctx.orphans:
            text = UNKNOWN_OUTCOME
        else:
            how = "interrupted" if call.id == ctx.applying else "not executed"
            text = f"The call was {how}: {reason}"
        ctx.transcript.append(
            Message.tool(call.id, text, name=call.name, metadata={"is_error": True})
        )
