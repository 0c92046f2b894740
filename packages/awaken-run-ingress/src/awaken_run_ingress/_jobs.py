"""The jobs the ingress queues: their entrypoint names and JSON payloads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awaken_runtime import Message

__all__ = ["CANCEL", "DECISION", "EXPIRE", "RUN", "DecisionJob", "RunJob"]

RUN = "awaken.run"
"""Start (or, after a worker died, continue) one run."""
DECISION = "awaken.decision"
"""Resume a waiting run with one human decision (deduplicated by ticket id)."""
CANCEL = "awaken.cancel"
"""Cancel a run wherever it is: running on a worker, waiting, or not started."""
EXPIRE = "awaken.expire"
"""A waiting run's ticket reached its deadline: the run is cancelled if it still waits."""


class RunJob(BaseModel):
    """A submitted run: everything a worker needs to start it."""

    model_config = ConfigDict(frozen=True)
    run_id: str
    agent_id: str
    thread_id: str
    profile_id: str = "default"
    namespace: str = "default"
    input: list[Message] = Field(default_factory=list)
    actions: list[dict[str, Any]] = Field(default_factory=list)
    """For a wake-up run: the scheduled actions an ended run left pending (JSON)."""
    not_before: datetime | None = None
    """For a wake-up run: the earliest of those actions' times; never started earlier."""


class DecisionJob(BaseModel):
    """A decision on one ticket of a waiting run."""

    model_config = ConfigDict(frozen=True)
    ticket: dict[str, Any]
    decision: dict[str, Any]
