"""What delegation exchanges: a child run's request, its outcome, the step's count.

The service that runs children and the handle a parent run holds are in
``_service``; these load only once a run delegates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_json

from .._defaults import new_list
from ..lifecycle._failures import Phase
from ..models._model import TokenUsage
from ..plugins._await import AwaitReason
from ..suspension._suspension import ResumeTicket, SuspendCall
from ..tools._cancel import CancellationToken
from ..tools._tool import ToolOutput

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..lifecycle._events import AgentEvent
    from ..lifecycle._run_state import RunState

__all__ = ["ChildOutcome", "DelegationRequest"]

ChildStatus = Literal[
    "completed", "failed", "cancelled", "max_steps", "stopped", "waiting", "refused"
]


class ChildOutcome(BaseModel):
    """How a child run went: its status, final text and usage."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    agent_id: str
    run_id: str
    thread_id: str
    status: ChildStatus
    text: str = ""
    reason: str = ""
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    tickets: list[ResumeTicket] = Field(default_factory=new_list)
    output: Any = None
    """The child's validated structured output, if it declares one (the parent's result)."""

    @classmethod
    def of(cls, state: RunState) -> ChildOutcome:
        """The outcome of a finished or waiting child run."""
        cause = state.end_cause
        status: ChildStatus
        reason = ""
        if state.phase is Phase.WAITING:
            status = "waiting"
        elif cause is None or cause.kind == "natural_end":
            status = "completed"
        elif cause.kind == "error":
            status, reason = "failed", cause.failure.message
        elif cause.kind == "stopped":
            status, reason = "stopped", cause.reason
        elif cause.kind == "max_steps":
            status, reason = "max_steps", f"reached max_steps={cause.max_steps}"
        else:
            status, reason = "cancelled", "the run was cancelled"
        return cls(
            agent_id=state.agent_id,
            run_id=state.run_id,
            thread_id=state.thread_id,
            status=status,
            text=state.final_text,
            reason=reason,
            usage=state.usage,
            cost=state.cost,
            tickets=state.tickets,
            output=state.output,
        )

    def to_output(self) -> ToolOutput:
        """The parent's tool result; raises ``SuspendCall`` for a waiting child."""
        if self.status == "waiting":
            raise SuspendCall(
                AwaitReason.DELEGATION,
                {
                    "agent_id": self.agent_id,
                    "child_run_id": self.run_id,
                    "child_thread_id": self.thread_id,
                    "child_ticket": self.tickets[0].model_dump(mode="json"),
                    # What the parent has already counted of this child: a resume
                    # reports the child's whole-run total, so it adds only the rest.
                    "child_usage": self.usage.model_dump(mode="json"),
                    "child_cost": self.cost,
                },
            )
        result = self.output if self.output is not None else self.text
        body = {"agent_id": self.agent_id, "status": self.status, "result": result}
        if self.reason:
            body["reason"] = self.reason
        content = to_json(body).decode()
        if self.status == "completed":
            return ToolOutput.ok(content)
        return ToolOutput.error(content)


@dataclass(slots=True)
class DelegationRequest:
    """One child run to start (or resume) on behalf of a parent run."""

    agent_id: str
    prompt: str
    parent_run_id: str
    thread_id: str
    profile_id: str
    namespace: str
    cancel: CancellationToken
    on_event: Callable[[AgentEvent], None] | None = None
    context: dict[str, Any] | None = None
    inherited: Any = None
    """The parent's resolved agent, whose inheritable plugins also apply to the child."""
    lineage: tuple[str, ...] = ()
    """The agent ids from the root run down to the delegating parent."""
    tree: DelegationTree | None = None
    """The count of children started under the same root step (shared by the whole tree)."""


@dataclass(slots=True)
class DelegationTree:
    """How many sub-agent runs have started under one step of a root run."""

    step: int
    started: int = 0
