"""What a parked step leaves in the store: tickets, the parked-run record, closed calls.

Functions of the run's ``RunDeps`` and ``LegState``: the step loop uses them to park a step,
the resumer to checkpoint each decided call and to re-park what still waits.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..lifecycle._failures import EndCause
from ..messages._message import Message, ToolCall, new_id
from ..state._engine import Scope
from ..suspension._suspension import ParkedRun, ResumeTicket
from ._calls_outcome import Parked
from ._deps import RunDeps
from ._leg import LegState

__all__ = [
    "UNKNOWN_OUTCOME",
    "close_open_calls",
    "open_calls",
    "parked_record",
    "ticket_parked_calls",
]

_RUN = Scope.RUN


def ticket_parked_calls(
    deps: RunDeps, leg: LegState, parked_calls: Sequence[Parked], snapshot_id: str
) -> list[ResumeTicket]:
    """Turn ``parked_calls`` into tickets of this leg."""
    tickets = []
    for parked in parked_calls:
        ticket = ResumeTicket(
            ticket_id=new_id("tkt_"),
            run_id=deps.run_id,
            thread_id=deps.binding.thread_id,
            snapshot_id=snapshot_id,
            fingerprint=deps.agent.snapshot.fingerprint,
            await_reason=parked.reason,
            call=parked.call,
            payload=parked.payload,
            deadline=parked.deadline,
            not_before=parked.not_before,
            trace=leg.trace,
        )
        if deps.ticket_secret is not None:
            ticket = ticket.signed(deps.ticket_secret)
        tickets.append(ticket)
    return tickets


def parked_record(
    deps: RunDeps,
    leg: LegState,
    snapshot_id: str,
    tickets: list[ResumeTicket],
    held: Sequence[Message],
) -> ParkedRun:
    """The stored record of a parked run: where it stopped, which tickets wait, and the
    AFTER_TOOL messages (``held``) that follow the step's results once none waits."""
    binding = deps.binding
    return ParkedRun(
        run_id=deps.run_id,
        agent_id=deps.config.id,
        fingerprint=deps.agent.snapshot.fingerprint,
        snapshot_id=snapshot_id,
        thread_id=binding.thread_id,
        profile_id=binding.profile_id,
        namespace=binding.namespace,
        step=leg.step,
        seq=leg.seq + 1,
        usage=leg.usage,
        cost=leg.cost,
        run_state=[(k, v) for (s, k), v in leg.engine.data.items() if s is _RUN],
        tickets=tickets,
        held_messages=list(held),
    )


UNKNOWN_OUTCOME = (
    "The outcome of the call is unknown: the process resuming it stopped before recording "
    "its result, so it may have run. Check before calling it again."
)
"""What the model is told about a call an earlier resume claimed and never answered."""


def open_calls(leg: LegState) -> list[ToolCall]:
    """The calls of the transcript's last tool-calling step that have no result yet."""
    answered = set()
    for message in reversed(leg.transcript.view()):
        if message.role == "tool":
            answered.add(message.tool_call_id)
            continue
        if message.role == "assistant" and message.tool_calls:
            return [c for c in message.tool_calls if c.id not in answered]
        break
    return []


def close_open_calls(leg: LegState, why: EndCause | str) -> None:
    """Answer calls of a checkpointed, unfinished step so the thread stays valid.

    A call an earlier, dead resume claimed (``leg.orphans``) may have run: the
    model is told its outcome is unknown, never that it did not run.
    """
    reason = why if isinstance(why, str) else f"the run ended ({why.kind})."
    for call in open_calls(leg):
        if call.id in leg.orphans:
            text = UNKNOWN_OUTCOME
        else:
            how = "interrupted" if call.id == leg.applying else "not executed"
            text = f"The call was {how}: {reason}"
        leg.transcript.append(
            Message.tool(call.id, text, name=call.name, metadata={"is_error": True})
        )
