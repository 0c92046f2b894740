"""``EventWriter``: an awaken leg's events as A2A task events on the SDK's queue.

Text deltas append to the ``response`` artifact; tool calls, run starts and
every event of a sub-agent (another run id) are WORKING status updates
carrying the awaken event in their metadata (no message, so the task's
history does not grow with them); the leg's end is
the final status: COMPLETED, FAILED, CANCELED, or INPUT_REQUIRED with the
pending question as the status message (its text, plus the tickets as data).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from a2a.server.events import EventQueue
from a2a.types import a2a_pb2 as pb

from awaken_runtime import (
    AgentEvent,
    Phase,
    ResumeTicket,
    RunFinish,
    RunStart,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)

from ._camel import to_wire
from ._wire import (
    EVENT_KEY,
    RESPONSE_ARTIFACT,
    SEQ_KEY,
    TICKETS_KEY,
    USAGE_KEY,
    data_part,
    question,
    status_now,
    struct,
    text_part,
)

__all__ = ["EventWriter", "status_message"]


def status_message(
    task_id: str, context_id: str, text: str, tickets: list[ResumeTicket] | None = None
) -> pb.Message:
    """An agent message for a status update; ``tickets`` ride along as a data part."""
    parts = [text_part(text)]
    if tickets:
        parts.append(data_part({TICKETS_KEY: [to_wire(t) for t in tickets]}))
    return pb.Message(
        message_id=uuid.uuid4().hex,
        role=pb.ROLE_AGENT,
        task_id=task_id,
        context_id=context_id,
        parts=parts,
    )


class EventWriter:
    """Writes one task's events to the SDK's event queue."""

    def __init__(self, queue: EventQueue, task_id: str, context_id: str) -> None:
        self.queue = queue
        self.task_id = task_id
        self.context_id = context_id
        self._streamed = False

    async def status(
        self,
        state: int,
        text: str = "",
        *,
        tickets: list[ResumeTicket] | None = None,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        """A status update, with a message when ``text`` is given."""
        status = status_now(state)
        if text:
            status.message.CopyFrom(status_message(self.task_id, self.context_id, text, tickets))
        update = pb.TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=status
        )
        if metadata:
            update.metadata.CopyFrom(struct(dict(metadata)))
        await self.queue.enqueue_event(update)

    async def text(self, delta: str, *, seq: int = 0, last: bool = False) -> None:
        """Append ``delta`` to the response artifact (the first chunk creates it)."""
        artifact = pb.Artifact(artifact_id=RESPONSE_ARTIFACT, name="response")
        artifact.parts.append(text_part(delta))
        if seq:
            artifact.metadata.CopyFrom(struct({SEQ_KEY: seq}))
        await self.queue.enqueue_event(
            pb.TaskArtifactUpdateEvent(
                task_id=self.task_id,
                context_id=self.context_id,
                artifact=artifact,
                append=self._streamed,
                last_chunk=last,
            )
        )
        self._streamed = True

    async def event(self, event: AgentEvent) -> None:
        """Write one awaken event; a sub-agent's events (another run id) ride as metadata."""
        if event.run_id != self.task_id:
            await self.status(pb.TASK_STATE_WORKING, metadata={EVENT_KEY: to_wire(event)})
        elif isinstance(event, TextDelta):
            if event.channel == "text" and event.delta:
                await self.text(event.delta, seq=event.seq)
        elif isinstance(event, (RunStart, ToolCallReady, ToolCallDone)):
            await self.status(pb.TASK_STATE_WORKING, metadata={EVENT_KEY: to_wire(event)})
        elif isinstance(event, RunFinish):
            await self.finish(event)

    async def finish(self, event: RunFinish) -> None:
        """The leg's end as the task's final (or input-required) status."""
        usage = {
            USAGE_KEY: {"usage": to_wire(event.usage), "cost": event.cost},
            EVENT_KEY: to_wire(event),
        }
        if event.phase is Phase.WAITING:
            text = "\n".join(question(t) for t in event.tickets) or "The run waits for input."
            await self.status(
                pb.TASK_STATE_INPUT_REQUIRED, text, tickets=event.tickets, metadata=usage
            )
            return
        cause = event.end_cause
        kind = cause.kind if cause is not None else "natural_end"
        if kind in ("natural_end", "stopped"):
            if not self._streamed and event.final_text:
                await self.text(event.final_text, last=True)
            reason = cause.reason if kind == "stopped" else ""  # type: ignore[union-attr]
            await self.status(pb.TASK_STATE_COMPLETED, reason, metadata=usage)
        elif kind == "cancelled":
            await self.status(pb.TASK_STATE_CANCELED, "the run was cancelled", metadata=usage)
        elif kind == "max_steps":
            await self.status(
                pb.TASK_STATE_FAILED, "the run reached its step limit", metadata=usage
            )
        else:
            message = cause.failure.message  # type: ignore[union-attr]
            await self.status(pb.TASK_STATE_FAILED, message, metadata=usage)
