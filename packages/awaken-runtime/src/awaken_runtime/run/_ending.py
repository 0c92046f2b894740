"""What a finished (or parked) run leg reports: its run record, ``RunState`` and ``RunFinish``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from .._errors import CapabilityBoundError
from ..lifecycle._failures import CapabilityBoundFailure, EndCause, Error, NaturalEnd, Phase
from ..lifecycle._run_state import RunState
from ..stores._thread_store import RunRecord
from ..suspension._suspension import ResumeTicket
from ._run_context import RunContext

__all__ = ["bound_failure", "leg_result", "run_record"]


def bound_failure(exc: CapabilityBoundError) -> Error:
    """The end cause of a run whose plugin exceeded its capability bound."""
    return Error(
        failure=CapabilityBoundFailure(plugin_id=exc.plugin_id, item=exc.item, message=str(exc))
    )


def run_record(
    ctx: RunContext, phase: Phase, cause: EndCause | None, pending: Sequence[Any] = ()
) -> RunRecord:
    """The run's stored record as of now (``pending``: an ended run's unrun actions)."""
    now = datetime.now(UTC)
    if ctx.started_at is None:
        ctx.started_at = now  # a resumed leg restarts this; the store keeps the first
    # Every field is already of its type (the run built them): validating would change
    # nothing but build the record's validator, end-cause union and all, in each process.
    return RunRecord.model_construct(
        run_id=ctx.run_id,
        thread_id=ctx.binding.thread_id,
        agent_id=ctx.config.id,
        phase=phase,
        end_cause=cause,
        steps=ctx.step,
        usage=ctx.usage,
        cost=ctx.cost,
        started_at=ctx.started_at,
        updated_at=now,
        pending_actions=list(pending),
    )


def leg_result(
    ctx: RunContext,
    phase: Phase,
    cause: EndCause | None,
    tickets: list[ResumeTicket],
    pending: list[Any],
) -> RunState:
    """The leg's ``RunState``; its ``RunFinish`` event goes out first."""
    natural = isinstance(cause, NaturalEnd)
    final = ctx.final_text if natural else ""
    output = ctx.output.value if natural and ctx.output is not None else None
    usage = ctx.usage
    # Built from the run's own typed values, as ``run_record`` (the lists are copied,
    # as validation would): no validator is built for a result nobody validates.
    state = RunState.model_construct(
        parent_run_id=ctx.parent_run_id,
        run_id=ctx.run_id,
        thread_id=ctx.binding.thread_id,
        agent_id=ctx.config.id,
        phase=phase,
        end_cause=cause,
        final_text=final,
        steps=ctx.step,
        usage=usage,
        cost=ctx.cost,
        new_messages=list(ctx.persisted),
        log=list(ctx.engine.log),
        state=dict(ctx.engine.data),
        tickets=list(tickets),
        pending_actions=list(pending),
        output=output,
        finish_reason=ctx.finish_reason,
    )
    observation = ctx.observation
    if observation is not None:
        ctx.observation = None  # a leg ends once
        observation.end(state)
    if ctx.emit is not None:
        from ..lifecycle._events import RunFinish  # runs nobody listens to never load events

        ctx.emit(
            RunFinish(
                seq=ctx.next_seq(),
                run_id=ctx.run_id,
                phase=phase,
                end_cause=cause,
                ticket=tickets[0] if tickets else None,
                tickets=tickets,
                final_text=final,
                usage=usage,
                cost=ctx.cost,
                pending_actions=pending,
                output=output,
                finish_reason=ctx.finish_reason,
            )
        )
    return state
