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
from ._deps import RunDeps
from ._leg import LegState

__all__ = ["bound_failure", "leg_result", "run_record"]


def bound_failure(exc: CapabilityBoundError) -> Error:
    """The end cause of a run whose plugin exceeded its capability bound."""
    return Error(
        failure=CapabilityBoundFailure(plugin_id=exc.plugin_id, item=exc.item, message=str(exc))
    )


def run_record(
    deps: RunDeps, leg: LegState, phase: Phase, cause: EndCause | None, pending: Sequence[Any] = ()
) -> RunRecord:
    """The run's stored record as of now (``pending``: an ended run's unrun actions)."""
    now = datetime.now(UTC)
    if leg.started_at is None:
        leg.started_at = now  # a resumed leg restarts this; the store keeps the first
    # Every field is already of its type (the run built them): validating would change
    # nothing but build the record's validator, end-cause union and all, in each process.
    return RunRecord.model_construct(
        run_id=deps.run_id,
        thread_id=deps.binding.thread_id,
        agent_id=deps.config.id,
        phase=phase,
        end_cause=cause,
        steps=leg.step,
        usage=leg.usage,
        cost=leg.cost,
        started_at=leg.started_at,
        updated_at=now,
        pending_actions=list(pending),
    )


def leg_result(
    deps: RunDeps,
    leg: LegState,
    phase: Phase,
    cause: EndCause | None,
    tickets: list[ResumeTicket],
    pending: list[Any],
) -> RunState:
    """The leg's ``RunState``; its ``RunFinish`` event goes out first."""
    natural = isinstance(cause, NaturalEnd)
    final = leg.final_text if natural else ""
    output = leg.output.value if natural and leg.output is not None else None
    usage = leg.usage
    # Built from the run's own typed values, as ``run_record`` (the lists are copied,
    # as validation would): no validator is built for a result nobody validates.
    state = RunState.model_construct(
        parent_run_id=deps.parent_run_id,
        run_id=deps.run_id,
        thread_id=deps.binding.thread_id,
        agent_id=deps.config.id,
        phase=phase,
        end_cause=cause,
        final_text=final,
        steps=leg.step,
        usage=usage,
        cost=leg.cost,
        new_messages=list(leg.persisted),
        log=list(leg.engine.log),
        state=dict(leg.engine.data),
        tickets=list(tickets),
        pending_actions=list(pending),
        output=output,
        finish_reason=leg.finish_reason,
    )
    observation = leg.observation
    if observation is not None:
        leg.observation = None  # a leg ends once
        observation.end(state)
    if deps.emit is not None:
        from ..lifecycle._events import RunFinish  # runs nobody listens to never load events

        deps.emit(
            RunFinish(
                seq=leg.next_seq(),
                run_id=deps.run_id,
                phase=phase,
                end_cause=cause,
                ticket=tickets[0] if tickets else None,
                tickets=tickets,
                final_text=final,
                usage=usage,
                cost=leg.cost,
                pending_actions=pending,
                output=output,
                finish_reason=leg.finish_reason,
            )
        )
    return state
