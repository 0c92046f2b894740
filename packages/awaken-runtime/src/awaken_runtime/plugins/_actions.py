"""Scheduled actions and the handlers plugins register for actions and effects.

A :class:`ScheduledAction` asks the loop to run a plugin's action handler at a
later phase point (this step or a later one) or once a wall-clock time has
passed. Pending actions live in committed run state, so they survive a
suspend/resume and a process restart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from ..state._effects import Effect
from ._points import PhaseHookPoint

if TYPE_CHECKING:
    from ._plugin import HookReaction, PhaseContext

__all__ = ["ActionHandler", "EffectHandler", "ScheduledAction"]

ACTIONS_KEY = "awaken.scheduled_actions"
"""Run-scope key holding pending scheduled actions by id."""


class ScheduledAction(BaseModel):
    """Run the handler registered for ``name`` later.

    ``point``: the phase point to run at (``None``: the first point reached
    once due). ``after_steps``: how many steps later (0 = this step, when the
    point comes up). ``at``: not before this wall-clock time.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)
    name: str = Field(min_length=1)
    payload: dict[str, Any] = Field(default_factory=dict)
    point: PhaseHookPoint | None = None
    after_steps: int = Field(default=0, ge=0)
    at: datetime | None = None


EffectHandler: TypeAlias = Callable[[Effect, "PhaseContext"], Awaitable[None]]
"""Runs one effect; ``ctx.store`` is the post-commit state."""

ActionHandler: TypeAlias = Callable[
    [ScheduledAction, "PhaseContext"], "Awaitable[HookReaction | None]"
]
"""Runs one due action on a fresh snapshot; may stage commands and schedule more."""
