"""Whether the run goes on: run-end guards at a natural end, plugin stop conditions at StepEnd."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._deps import RunDeps
from ._phases import PhaseEngine

if TYPE_CHECKING:
    from ..plugins._gates import Steer

__all__ = ["plugin_stop", "run_end_guards"]


async def run_end_guards(deps: RunDeps, phases: PhaseEngine) -> Steer | None:
    """The first guard's ``Steer``, in plugin order; ``None``: the run may end."""
    guards = deps.guards
    if not guards:
        return None
    from ..plugins._gates import Steer  # agents without guards never load the decisions

    for pid, guard in guards:
        ((_, decision),) = await phases.call_all(
            "RUN_END_GUARD", [(pid, guard, phases.hook_context("run_end_guard", pid))]
        )
        if isinstance(decision, Steer):
            return decision
    return None


async def plugin_stop(deps: RunDeps, phases: PhaseEngine) -> str | None:
    """The first plugin stop condition's reason (``"plugin: reason"``), or ``None``."""
    hooks = deps.stop_conditions
    if not hooks:
        return None
    results = await phases.call_all("STOP_CONDITION", phases.hook_calls("stop_condition", hooks))
    for pid, reason in results:
        if reason:
            return f"{pid}: {reason}"
    return None
