"""Request and response bodies of the neutral API (their JSON schemas feed /openapi.json)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from awaken_runtime import AgentConfig, Decision

__all__ = [
    "DECISION_SHAPE",
    "CreateThread",
    "InputMessage",
    "PublishConfig",
    "ResumeBody",
    "ResumeItem",
    "Rollback",
    "StartRun",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputMessage(_Body):
    """A user message of a run's input."""

    role: Literal["user"] = "user"
    content: str = Field(max_length=200_000)


class CreateThread(_Body):
    """``POST /v1/threads``."""

    agent_id: str | None = Field(default=None, min_length=1, max_length=128)


class StartRun(_Body):
    """``POST /v1/threads/{thread_id}/runs``."""

    agent_id: str = Field(min_length=1, max_length=128)
    input: str | list[InputMessage] = Field(
        description="the user text, or user messages", min_length=1
    )
    stream: bool = Field(default=False, description="answer with an SSE stream of AgentEvents")


DECISION_SHAPE = (
    'an object with "kind": {"kind": "approve"}, {"kind": "deny", "reason": "..."}, '
    '{"kind": "respond", "value": ...} (the answer to a question) or '
    '{"kind": "replay", "arguments": {...}}; approve and deny also take '
    '"remember": "once" | "thread" | "profile"'
)
"""What ``decision`` looks like, for the README and the 422 of a wrong one."""


class ResumeItem(_Body):
    """One decision on one pending ticket."""

    ticket_id: str = Field(min_length=1, max_length=128)
    decision: Decision


class ResumeBody(_Body):
    """``POST /v1/runs/{run_id}/resume``."""

    decisions: list[ResumeItem] = Field(min_length=1, max_length=64)
    stream: bool = False


class PublishConfig(_Body):
    """``POST /v1/agents``: a new version of an agent config."""

    config: AgentConfig = Field(description="an agent config (the agent-file format)")
    note: str = Field(default="", max_length=1000)


class Rollback(_Body):
    """``POST /v1/agents/{agent_id}/rollback``."""

    version: int = Field(ge=1)
