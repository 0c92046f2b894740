"""Whether the run goes on: run-end guards at a natural end, plugin stop conditions at StepEnd."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._phases import PhaseEngine
from ._run_context import RunContext

if TYPE_CHECKING:
    from ..plugins._gates import Steer

__all__ = ["plugin_stop", "run_end_guards"]


async def run_end_guards(ctx: RunContext, phases: PhaseEngine) -> Steer | None:
    """The first guard's ``Steer``, in plugin order; ``None``: the run may end."""
    guards = ctx.agent.guards
    if not guards:
        return None
    from ..plugins._gates import Steer  # agents without guards never load the decisions

    for pid, guard in guards:
        ((_, decision),) = await phases.call_all(
            "RUN_END_GUARD", [(pid, guard, ctx.hook_context("run_end_guard", pid))]
        )
        if isinstance(decision, Steer):
            return decision
    return None


async def plugin_stop(ctx: RunContext, phases: PhaseEngine) -> str | None:
    """The first plugin stop condition's reason (``"plugin: reason"``), or ``None``."""
    hooks = ctx.agent.stop_conditions
    if not hooks:
        return None
    results = await phases.call_all("STOP_CONDITION", ctx.hook_calls("stop_condition", hooks))
    for pid, reason in results:
        if reason:
            return f"{pid}: {reason}"
    return None
