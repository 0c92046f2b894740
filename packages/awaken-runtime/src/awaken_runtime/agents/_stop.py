"""Declarative stop conditions of an agent: the limits in ``AgentConfig.stop``.

The run evaluates them at every StepEnd (``run._stop.StopTracker``) and ends
``Stopped(reason)`` naming the first that fired.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._defaults import new_list

__all__ = ["LoopDetection", "StopConfig"]


class LoopDetection(BaseModel):
    """Stop when one tool gets the same arguments ``repeats`` times within ``window`` calls."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    repeats: int = Field(default=3, ge=2)
    window: int = Field(default=10, ge=2)


class StopConfig(BaseModel):
    """Limits that end a run with ``Stopped``; every field is optional."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    timeout_s: float | None = Field(default=None, gt=0)
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_consecutive_tool_errors: int | None = Field(default=None, ge=1)
    stop_on_tools: list[str] = Field(default_factory=new_list)
    stop_on_text: str | None = None
    """A regular expression searched in the model's text of each step."""
    loop_detection: LoopDetection | None = None

    @field_validator("stop_on_text")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"stop_on_text is not a valid regular expression: {exc}") from None
        return value

    @property
    def empty(self) -> bool:
        """Whether no condition is set (the tracker can be skipped)."""
        # Serialization knows the defaults; much cheaper than inspecting them.
        return not self.model_dump(exclude_defaults=True)
