"""Starting a leg's observation: what the run tells its ``RunObserver`` when a leg begins.

Called only when the runtime has an observer; the rest of the leg reports to
the ``RunObservation`` this stores on the ``LegState`` (inference and tool calls in
``_inference``/``_tool_calls``, the end in ``_ending.leg_result``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..lifecycle._observer import Leg, ObservedRun
from ..suspension._suspension import ResumeTicket
from ._deps import RunDeps
from ._leg import LegState

__all__ = ["observe_start"]


def observe_start(deps: RunDeps, leg: LegState, kind: Leg, tickets: Sequence[ResumeTicket]) -> None:
    """Tell the runtime's observer this leg (a ``kind`` of leg) starts; keep its
    observation and trace on ``leg``."""
    observer = deps.observer
    if observer is None:
        return
    parked: list[Mapping[str, str]] = []
    for ticket in tickets:
        # Distinct, in ticket order: tickets parked by one leg share its trace.
        if ticket.trace and ticket.trace not in parked:
            parked.append(ticket.trace)
    observation = observer.start_run(
        ObservedRun(
            run_id=deps.run_id,
            thread_id=deps.binding.thread_id,
            agent_id=deps.config.id,
            model=deps.model,
            parent_run_id=deps.parent_run_id,
            leg=kind,
            parked=tuple(parked),
        )
    )
    leg.observation = observation
    leg.trace = dict(observation.trace)
