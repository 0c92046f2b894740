"""``RunState``: what ``Runtime.run`` returns."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .._defaults import new_list
from ..messages._message import Message
from ..models._model import TokenUsage
from ..plugins._actions import ScheduledAction
from ..state._engine import CommittedBatch, Scope, StoreKey
from ..suspension._suspension import ResumeTicket
from ._failures import EndCause, Phase

__all__ = ["RunState"]

_T = TypeVar("_T")


class RunState(BaseModel):
    """The outcome of one run (or of one leg of a suspended run).

    ``new_messages`` are the messages this run checkpointed to the thread;
    ``log`` is every batch the run committed (its audit trail); ``state`` the
    final committed values of every scope the run saw.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)
    run_id: str
    thread_id: str
    agent_id: str
    phase: Phase
    parent_run_id: str | None = None
    end_cause: EndCause | None = None
    final_text: str = ""
    steps: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    new_messages: list[Message] = Field(default_factory=new_list)
    log: list[CommittedBatch] = Field(default_factory=new_list)
    state: dict[StoreKey, Any] = Field(default_factory=dict, exclude=True)
    tickets: list[ResumeTicket] = Field(default_factory=new_list)
    pending_actions: list[ScheduledAction] = Field(default_factory=new_list)
    """Scheduled actions never run because the run ended first (e.g. a time not yet
    reached); kept in the run's state and reported here rather than dropped."""
    """For a ``WAITING`` run: one ticket per parked call."""
    output: Any = None
    """The validated structured result (JSON value) when the agent declares an
    ``output``; ``final_text`` then holds it as JSON text."""
    finish_reason: str | None = None
    """The provider's finish reason for the last inference (``stop``, ``length``, ...)."""

    @property
    def ticket(self) -> ResumeTicket | None:
        """The first pending ticket, if the run is waiting."""
        return self.tickets[0] if self.tickets else None

    def output_as(self, output_type: type[_T]) -> _T:
        """:attr:`output` validated into ``output_type`` (the type ``OutputSpec.of`` took)."""
        if self.output is None:
            raise ValueError(
                f"run {self.run_id} has no structured output (end cause: "
                f"{self.end_cause.kind if self.end_cause else self.phase.value})"
            )
        value = self.output
        schema = TypeAdapter(output_type).json_schema()
        if schema.get("type") != "object" and isinstance(value, dict) and set(value) == {"result"}:
            value = value["result"]  # OutputSpec.of wrapped a non-object type
        return TypeAdapter(output_type).validate_python(value)

    def value(self, key: str, scope: Scope = Scope.THREAD, default: Any = None) -> Any:
        """A final committed state value."""
        return self.state.get((scope, key), default)
