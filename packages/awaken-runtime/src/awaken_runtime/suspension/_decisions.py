"""Decisions: the answers a human (or another system) gives to a ticket.

Apart from the tickets and parked runs (``_suspension``), which every run
record carries: only a resume, and whatever builds decisions, loads these.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = ["Approve", "Decision", "Deny", "Remember", "Replay", "Respond"]


Remember = Literal["once", "thread", "profile"]
"""How far a decision reaches: this call only, this thread, or this profile.

The runtime applies the decision to its call; plugins that gate calls (the
permissions extension) read ``remember`` from the decision they are shown
(``PhaseContext.decision``) and record a rule for the wider scope.
"""


class Approve(BaseModel):
    """Run the parked call (gates still apply, but none can suspend it again)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["approve"] = "approve"
    remember: Remember = "once"
    by: str | None = None
    """Who decided (for audit trails)."""


class Deny(BaseModel):
    """Do not run the call; the model sees ``reason`` as an error result."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["deny"] = "deny"
    reason: str = "denied by the user"
    remember: Remember = "once"
    by: str | None = None
    """Who decided (for audit trails)."""


class Respond(BaseModel):
    """Use ``value`` as the call's result without running the tool."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["respond"] = "respond"
    value: Any


class Replay(BaseModel):
    """Run the call with new ``arguments`` (through every gate again)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["replay"] = "replay"
    arguments: dict[str, Any]


Decision: TypeAlias = Annotated[Approve | Deny | Respond | Replay, Field(discriminator="kind")]
"""A human's (or system's) answer to one ticket; JSON form: ``{"kind": "approve"}``."""

decision_adapter: TypeAdapter[Decision] = TypeAdapter(Decision, config=ConfigDict(defer_build=True))
"""Validates a decision given as an object, a dict or JSON text."""
