"""``PhaseHookPoint``: where in the loop phase hooks run."""

from __future__ import annotations

import enum

__all__ = ["PhaseHookPoint"]


class PhaseHookPoint(enum.StrEnum):
    """Points of the loop where phase hooks run."""

    RUN_START = "run_start"
    STEP_START = "step_start"
    BEFORE_INFERENCE = "before_inference"
    AFTER_INFERENCE = "after_inference"
    AFTER_TOOL = "after_tool"
    STEP_END = "step_end"
    RUN_END = "run_end"
