"""Starting a leg's observation: what the run tells its ``RunObserver`` when a leg begins.

Called only when the runtime has an observer; the rest of the leg reports to
the ``RunObservation`` this stores on the context (inference and tool calls in
``_inference``/``_tool_calls``, the end in ``_ending.leg_result``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..lifecycle._observer import Leg, ObservedRun, RunObserver
from ..suspension._suspension import ResumeTicket
from ._run_context import RunContext

__all__ = ["observe_start"]


def observe_start(
    ctx: RunContext, observer: RunObserver, leg: Leg, tickets: Sequence[ResumeTicket]
) -> None:
    """Tell ``observer`` this leg starts; keep its observation and trace on ``ctx``."""
    parked: list[Mapping[str, str]] = []
    for ticket in tickets:
        # Distinct, in ticket order: tickets parked by one leg share its trace.
        if ticket.trace and ticket.trace not in parked:
            parked.append(ticket.trace)
    observation = observer.start_run(
        ObservedRun(
            run_id=ctx.run_id,
            thread_id=ctx.binding.thread_id,
            agent_id=ctx.config.id,
            model=ctx.model,
            parent_run_id=ctx.parent_run_id,
            leg=leg,
            parked=tuple(parked),
        )
    )
    ctx.observation = observation
    ctx.trace = dict(observation.trace)
