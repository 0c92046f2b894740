"""``AwaitReason``: why a run is waiting.

Apart from the gate decisions (``_gates``) so that tickets and parked runs,
which every store and ``RunState`` carry, do not load the decision models.
"""

from __future__ import annotations

import enum

__all__ = ["AwaitReason"]


class AwaitReason(enum.StrEnum):
    """Why a run is waiting."""

    TOOL_PERMISSION = "tool_permission"
    USER_INPUT = "user_input"
    EXTERNAL_EVENT = "external_event"
    RATE_LIMIT = "rate_limit"
    MANUAL_PAUSE = "manual_pause"
    SCHEDULED_ACTION = "scheduled_action"
    DELEGATION = "delegation"
