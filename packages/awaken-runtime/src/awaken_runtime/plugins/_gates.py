"""Tool gate decisions and run-end guard decisions (``AwaitReason`` is in ``_await``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from .._defaults import new_list
from ..messages._message import Message
from ..state._effects import Effect
from ..tools._tool import ToolOutput
from ._await import AwaitReason

__all__ = [
    "Block",
    "Complete",
    "GateDecision",
    "RunEndDecision",
    "Schedule",
    "ShortCircuit",
    "Steer",
    "Suspend",
]


class _Decision(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    rank: int = Field(default=0, exclude=True)
    effects: list[Effect] = Field(default_factory=new_list)
    """Side effects to run once the call's outcome is committed."""


class Block(_Decision):
    """Refuse the call; the model sees ``reason`` as an error result."""

    rank: int = Field(default=4, exclude=True)
    reason: str


class Suspend(_Decision):
    """Park the call until a human or another system decides."""

    rank: int = Field(default=3, exclude=True)
    await_reason: AwaitReason
    payload: dict[str, Any] = Field(default_factory=dict)


class ShortCircuit(_Decision):
    """Skip the tool and use ``output`` as its result."""

    rank: int = Field(default=2, exclude=True)
    output: ToolOutput


class Schedule(_Decision):
    """Park the call until ``at``."""

    rank: int = Field(default=1, exclude=True)
    at: datetime


GateDecision: TypeAlias = Block | Suspend | ShortCircuit | Schedule
"""What a gate may decide; ``None`` (no decision) allows the call."""


def winner(
    decisions: Sequence[tuple[str, GateDecision | None]],
) -> tuple[str, GateDecision] | None:
    """The winning ``(gate owner, decision)``: Block > Suspend > ShortCircuit > Schedule.

    Ties go to the first gate in order, so the reason the model sees and the
    plugin owning a resume do not depend on how many gates come after it.
    This is the one ranking of gate decisions; the loop calls it too.
    """
    best: tuple[str, GateDecision] | None = None
    for owner, decision in decisions:
        if decision is not None and (best is None or decision.rank > best[1].rank):
            best = (owner, decision)
    return best


def strongest(decisions: Sequence[GateDecision | None]) -> GateDecision | None:
    """The winning decision of :func:`winner`, without its owner."""
    best = winner([("", decision) for decision in decisions])
    return best[1] if best is not None else None


class Complete(BaseModel):
    """Let the run end."""

    model_config = ConfigDict(frozen=True, defer_build=True)


class Steer(BaseModel):
    """Keep going: ``message`` becomes a new user turn and the loop takes another step."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    message: str | Message


RunEndDecision: TypeAlias = Complete | Steer
"""What a run-end guard decides."""
