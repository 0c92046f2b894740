"""``AgentEvent``: the neutral, JSON-serializable projection of a run (seven variants)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .._defaults import new_list
from ..models._model import TokenUsage
from ..plugins._actions import ScheduledAction
from ..state._engine import Command
from ..suspension._suspension import ResumeTicket
from ._failures import EndCause, Phase

__all__ = [
    "AgentEvent",
    "RunFinish",
    "RunStart",
    "StepEnd",
    "StepStart",
    "TextDelta",
    "ToolCallDone",
    "ToolCallReady",
    "event_adapter",
]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    seq: int
    run_id: str


class RunStart(_Event):
    """A run began (or resumed)."""

    type: Literal["run_start"] = "run_start"
    thread_id: str
    agent_id: str
    parent_run_id: str | None = None
    """Set for a sub-agent run: the run that delegated to it."""


class StepStart(_Event):
    """A step began."""

    type: Literal["step_start"] = "step_start"
    step: int


class TextDelta(_Event):
    """Streamed model output on the ``text`` or ``reasoning`` channel."""

    type: Literal["text_delta"] = "text_delta"
    channel: Literal["text", "reasoning"] = "text"
    delta: str


class ToolCallReady(_Event):
    """The model asked for a tool call."""

    type: Literal["tool_call_ready"] = "tool_call_ready"
    call_id: str
    name: str
    arguments: dict[str, Any]


class ToolCallDone(_Event):
    """A tool call finished (or was blocked/short-circuited)."""

    type: Literal["tool_call_done"] = "tool_call_done"
    call_id: str
    output: str
    outcome: Literal["success", "error", "blocked", "short_circuit", "suspended"]


class StepEnd(_Event):
    """A step ended; carries its usage and the state it committed."""

    type: Literal["step_end"] = "step_end"
    step: int
    usage: TokenUsage
    state_delta: list[Command]
    finish_reason: str | None = None
    """Why the step's inference stopped, as the provider said (``stop``, ``length``, ...)."""
    model: str | None = None
    """The upstream model that answered, when the executor says (e.g. a fallback)."""


class RunFinish(_Event):
    """The run stopped: ended, or waiting for a decision."""

    type: Literal["run_finish"] = "run_finish"
    phase: Phase
    end_cause: EndCause | None = None
    ticket: ResumeTicket | None = None
    """The first pending ticket of a waiting run."""
    tickets: list[ResumeTicket] = Field(default_factory=new_list)
    final_text: str = ""
    usage: TokenUsage
    cost: float | None = None
    pending_actions: list[ScheduledAction] = Field(default_factory=new_list)
    """Scheduled actions the run ended before running (see ``RunState``)."""
    output: Any = None
    """The validated structured result, if the agent declares an output."""
    finish_reason: str | None = None
    """The provider's finish reason for the run's last inference."""


AgentEvent: TypeAlias = Annotated[
    RunStart | StepStart | TextDelta | ToolCallReady | ToolCallDone | StepEnd | RunFinish,
    Field(discriminator="type"),
]
"""Any run event; ``type`` tells the variant and ``seq`` orders them within a run."""

event_adapter: TypeAdapter[AgentEvent] = TypeAdapter(
    AgentEvent, config=ConfigDict(defer_build=True)
)
"""Validates/serializes any :data:`AgentEvent` (``event_adapter.validate_json(...)``)."""
