"""Effects: the last step of Snapshot -> Action -> Commit -> Effect.

An :class:`Effect` is a named side effect (a webhook, an audit record, a
metric) that a hook, gate decision or tool emits with its commands. It runs
through the handler a plugin registered for its name, only after the batch
that carried it committed, and sees the post-commit store. A failing handler
is logged and recorded in state; it never rolls the commit back.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Effect"]

EFFECT_FAILURES_KEY = "awaken.effect_failures"
"""Run-scope COMMUTATIVE key recording failed effect handlers by effect id."""


class Effect(BaseModel):
    """A named side effect to run after its batch commits."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    name: str = Field(min_length=1)
    payload: dict[str, Any] = Field(default_factory=dict)
