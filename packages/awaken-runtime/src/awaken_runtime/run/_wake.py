"""Carrying scheduled actions into a new run: how an ended run is woken up later.

A run that ends with a time-based ``ScheduledAction`` still pending reports it
in ``RunState.pending_actions``. Whoever keeps time for the thread (the run
ingress, a cron job) starts a new run on it once the time has come, passing
those actions as ``Runtime.run(..., actions=...)``: they enter the new run's
pending table before RunStart, so each one runs at the first point where it
is due (RunStart for an action with no point once its time has passed), and
one whose time has not come stays pending and is reported again at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._errors import AgentConfigError
from ..messages._message import new_id
from ..plugins._actions import ACTIONS_KEY, ScheduledAction
from ..state._engine import Command, Scope, StagedCommand
from ._phases import RUNTIME

if TYPE_CHECKING:
    from ._deps import RunDeps
    from ._leg import LegState

__all__ = ["seed_actions"]


def seed_actions(
    deps: RunDeps, leg: LegState, actions: Sequence[ScheduledAction | dict[str, Any]]
) -> list[StagedCommand]:
    """Put ``actions`` in the run's pending table, due from step 0, owned by their handler.

    Returns the write that commits the table with RunStart's batch, so a crash
    after RunStart still finds them pending (the table is also in the run's
    data already, for RunStart's own hooks and its due-action check).
    """
    handlers = deps.action_handlers
    table: dict[str, Any] = dict(leg.engine.data.get((Scope.RUN, ACTIONS_KEY)) or {})
    for given in actions:
        action = (
            given if isinstance(given, ScheduledAction) else ScheduledAction.model_validate(given)
        )
        if action.name not in handlers:
            raise AgentConfigError(
                f"run of agent {deps.config.id!r} was given scheduled action {action.name!r}, "
                f"but no enabled plugin of the agent registers a handler for it "
                f"(known: {sorted(handlers) or 'none'}); enable the plugin that scheduled it"
            )
        owner, _handler = handlers[action.name]
        table[new_id("act_")] = {
            "action": action.model_dump(mode="json"),
            "due_step": 0,
            "scheduled_by": owner,
        }
    if not actions:
        return []
    leg.engine.data[(Scope.RUN, ACTIONS_KEY)] = table
    return [StagedCommand(RUNTIME, Command.set(ACTIONS_KEY, table, scope=Scope.RUN))]
