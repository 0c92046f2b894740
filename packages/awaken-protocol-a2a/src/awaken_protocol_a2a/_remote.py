"""``RemoteLeg``: one A2A exchange with a remote agent, read as a child run leg.

Every response of the stream becomes what a native child would have sent
the parent: an awaken peer's own events (``awaken.event``) are passed on
with the parent's run id as ``parent_run_id``; streamed artifact text becomes
``TextDelta``; another peer gets a ``RunStart`` and a ``RunFinish`` made up
from its task. The end is a ``ChildOutcome``: completed with the answer,
failed or cancelled with the reason, or waiting with a ticket that carries
the remote task's id and context id (``run_id`` and ``thread_id``), so the
parent's resume can answer it with a follow-up message.
"""

from __future__ import annotations

from typing import Any, Literal

from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict

from awaken_runtime import (
    AgentEvent,
    AwaitReason,
    ChildOutcome,
    DelegationRequest,
    Phase,
    ResumeTicket,
    RunFinish,
    RunStart,
    TextDelta,
    TokenUsage,
    ToolCall,
    event_adapter,
)

from ._camel import from_wire, whole_numbers
from ._wire import EVENT_KEY, SEQ_KEY, TERMINAL, TICKETS_KEY, USAGE_KEY, data_parts, message_text

__all__ = ["RemoteLeg"]

ChildStatus = Literal["completed", "failed", "cancelled"]

_STATUS: dict[int, ChildStatus] = {
    pb.TASK_STATE_COMPLETED: "completed",
    pb.TASK_STATE_FAILED: "failed",
    pb.TASK_STATE_CANCELED: "cancelled",
    pb.TASK_STATE_REJECTED: "failed",
}


class RemoteLeg:
    """Reads one streamed exchange for ``request`` (see the module docstring)."""

    def __init__(self, request: DelegationRequest) -> None:
        self.request = request
        self.task_id = ""
        self.context_id = ""
        self.state: int = pb.TASK_STATE_UNSPECIFIED
        self.text: list[str] = []
        self.usage = TokenUsage()
        self.cost: float | None = None
        self.status_message = pb.Message()
        self._seq = 0
        self._started = False
        self._native = False

    @property
    def started(self) -> bool:
        """Whether the remote accepted the message (a task exists; do not resend)."""
        return bool(self.task_id)

    def _emit(self, event: AgentEvent) -> None:
        self._seq = max(self._seq, event.seq)
        if self.request.on_event is not None:
            self.request.on_event(event)

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self._emit(
                RunStart(
                    seq=self._seq + 1,
                    run_id=self.task_id,
                    thread_id=self.context_id,
                    agent_id=self.request.agent_id,
                    parent_run_id=self.request.parent_run_id,
                )
            )

    def read(self, item: pb.StreamResponse) -> None:
        """Take one response of the stream."""
        if item.HasField("task"):
            self.task_id, self.context_id = item.task.id, item.task.context_id
            self.state = item.task.status.state
            self.status_message = item.task.status.message
        elif item.HasField("status_update"):
            update = item.status_update
            self.task_id, self.context_id = update.task_id, update.context_id
            self.state = update.status.state
            self.status_message = update.status.message
            meta = whole_numbers(MessageToDict(update.metadata))
            self._awaken_event(meta.get(EVENT_KEY))
            used = meta.get(USAGE_KEY)
            if isinstance(used, dict):
                usage = from_wire(TokenUsage, used.get("usage") or {})
                self.usage = TokenUsage.model_validate(usage)
                self.cost = used.get("cost")
        elif item.HasField("artifact_update"):
            chunk = item.artifact_update
            self.task_id, self.context_id = chunk.task_id, chunk.context_id
            self._start()
            seq = whole_numbers(MessageToDict(chunk.artifact.metadata)).get(SEQ_KEY)
            for part in chunk.artifact.parts:
                if part.HasField("text") and part.text:
                    self.text.append(part.text)
                    number = seq if isinstance(seq, int) else self._seq + 1
                    self._emit(TextDelta(seq=number, run_id=self.task_id, delta=part.text))
        elif item.HasField("message"):  # a peer that answers with a message, not a task
            self.state = pb.TASK_STATE_COMPLETED
            self.text.append(message_text(item.message))

    def _awaken_event(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        event = event_adapter.validate_python(from_wire(AgentEvent, data))
        if event.run_id != self.task_id:  # the remote's own sub-agents: as they are
            if self.request.on_event is not None:
                self.request.on_event(event)
            return
        self._native = True
        if isinstance(event, RunStart):
            self._started = True
            event = event.model_copy(
                update={"parent_run_id": self.request.parent_run_id, "thread_id": self.context_id}
            )
        self._emit(event)

    def outcome(self, agent_id: str) -> ChildOutcome:
        """The leg's end as the parent's tool call sees it."""
        base = {
            "agent_id": agent_id,
            "run_id": self.task_id,
            "thread_id": self.context_id,
            "usage": self.usage,
            "cost": self.cost,
        }
        said = message_text(self.status_message)
        if self.state == pb.TASK_STATE_INPUT_REQUIRED:
            return ChildOutcome(status="waiting", tickets=[self._ticket(said)], **base)
        status: ChildStatus | None = _STATUS.get(int(self.state))
        if status is None:
            status = "failed"
            said = f"the remote task ended in {pb.TaskState.Name(self.state)} without a result"
        if not self._native:
            self._start()
            self._emit(
                RunFinish(
                    seq=self._seq + 1,
                    run_id=self.task_id,
                    phase=Phase.ENDED,
                    final_text="".join(self.text),
                    usage=self.usage,
                )
            )
        reason = "" if status == "completed" else said or f"the remote task is {status}"
        return ChildOutcome(status=status, text="".join(self.text), reason=reason, **base)

    def ended(self) -> bool:
        """Whether the remote task reached an end (or waits for input)."""
        return self.state in TERMINAL or self.state == pb.TASK_STATE_INPUT_REQUIRED

    def _ticket(self, question: str) -> ResumeTicket:
        """The child's ticket, re-addressed to the remote task and context."""
        where = {"run_id": self.task_id, "thread_id": self.context_id}
        for item in data_parts(self.status_message):
            tickets = item.get(TICKETS_KEY) if isinstance(item, dict) else None
            if isinstance(tickets, list) and tickets:
                remote = ResumeTicket.model_validate(from_wire(ResumeTicket, tickets[0]))
                return remote.model_copy(update={**where, "signature": None})
        return ResumeTicket(
            ticket_id=f"{self.task_id}:input",
            snapshot_id="",
            fingerprint="",
            await_reason=AwaitReason.USER_INPUT,
            call=ToolCall(id=self.task_id, name="a2a_input", arguments={}),
            payload={"question": question},
            **where,
        )
