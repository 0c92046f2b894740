"""``AwakenAgentExecutor``: one awaken agent behind the SDK's request handler.

A message without a task starts a run (task id = run id, context = thread);
a message to an input-required task answers its pending ticket and resumes
the run. The leg's events go out as A2A events (``_events.py``). An answer
that does not fit its ticket, or repeats one already given, leaves the task
input-required and says why in the status message: nothing is resumed and
the task is not failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.types import a2a_pb2 as pb

from awaken_runtime import (
    AgentEvent,
    AwakenError,
    CancellationToken,
    ResumeRejected,
    ResumeTicket,
    ThreadBusy,
)

from ._answers import AnswerError, read_answer
from ._camel import from_wire
from ._events import EventWriter
from ._tasks import profile_of, thread_for
from ._wire import TICKETS_KEY, data_parts, message_text, question, status_now

if TYPE_CHECKING:
    from awaken_runtime import Runtime

__all__ = ["AwakenAgentExecutor"]


@dataclass(slots=True)
class _Running:
    token: CancellationToken
    done: asyncio.Event = field(default_factory=asyncio.Event)


class AwakenAgentExecutor(AgentExecutor):
    """Runs ``agent_id`` on ``runtime`` for A2A requests (see the module docstring)."""

    def __init__(self, runtime: Runtime, agent_id: str, *, cancel_wait: float = 30.0) -> None:
        self.runtime = runtime
        self.agent_id = agent_id
        self.cancel_wait = cancel_wait
        self._running: dict[str, _Running] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Start or continue the run of ``context``'s task."""
        task_id = str(context.task_id)
        current = context.current_task
        message = context.message
        assert message is not None  # the handler only executes message requests
        profile = profile_of(context.call_context)
        if current is None:
            context_id = str(context.context_id)
            writer = EventWriter(event_queue, task_id, context_id)
            await event_queue.enqueue_event(
                pb.Task(
                    id=task_id,
                    context_id=context_id,
                    status=status_now(pb.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
            text = _prompt(message)
            if not text:
                await writer.status(
                    pb.TASK_STATE_REJECTED, "the message has no text; send a text part"
                )
                return
            token = CancellationToken()
            events = self.runtime.stream(
                self.agent_id,
                text,
                thread_id=thread_for(profile, context_id),
                run_id=task_id,
                profile_id=profile,
                cancel=token,
            )
            await self._drive(writer, events, token, rejected=pb.TASK_STATE_REJECTED)
            return
        writer = EventWriter(event_queue, task_id, current.context_id)
        if current.status.state != pb.TASK_STATE_INPUT_REQUIRED:
            state = pb.TaskState.Name(current.status.state)
            await writer.status(
                current.status.state,
                f"task {task_id} is {state}, not waiting for input; wait for it to end, "
                f"or start a new task in context {current.context_id}",
            )
            return
        pending = _pending(current)
        if any(m.message_id == message.message_id for m in current.history):
            await writer.status(
                pb.TASK_STATE_INPUT_REQUIRED,
                "\n".join(
                    [f"message {message.message_id} was already received", *map(question, pending)]
                ),
                tickets=pending,
            )
            return
        try:
            ticket, decision = read_answer(message, pending)
        except AnswerError as exc:
            again = "\n".join([str(exc), *(question(t) for t in pending)])
            await writer.status(pb.TASK_STATE_INPUT_REQUIRED, again, tickets=pending)
            return
        token = CancellationToken()
        events = self.runtime.stream_resume(ticket, decision, cancel=token)
        waiting = pb.TASK_STATE_INPUT_REQUIRED
        await self._drive(writer, events, token, rejected=waiting, tickets=pending)

    async def _drive(
        self,
        writer: EventWriter,
        events: AsyncIterator[AgentEvent],
        token: CancellationToken,
        *,
        rejected: int,
        tickets: list[ResumeTicket] | None = None,
    ) -> None:
        running = self._running[writer.task_id] = _Running(token)
        try:
            async for event in events:
                await writer.event(event)
        except (ThreadBusy, ResumeRejected) as exc:
            # Nothing ran: a new task is rejected, an answer leaves the task waiting.
            await writer.status(rejected, str(exc), tickets=tickets)
        except AwakenError as exc:
            await writer.status(pb.TASK_STATE_FAILED, str(exc))
        finally:
            running.done.set()
            self._running.pop(writer.task_id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the running leg at its next boundary, or end the waiting run."""
        task_id = str(context.task_id)
        running = self._running.get(task_id)
        if running is not None:
            running.token.cancel()
            # The leg writes CANCELED itself when it stops.
            await asyncio.wait_for(running.done.wait(), self.cancel_wait)
            return
        current = context.current_task
        if current is None:
            return
        writer = EventWriter(event_queue, task_id, current.context_id)
        if current.status.state == pb.TASK_STATE_INPUT_REQUIRED:
            thread = thread_for(profile_of(context.call_context), current.context_id)
            # ResumeRejected: the run ended meanwhile; the task still ends as cancelled.
            with contextlib.suppress(ResumeRejected):
                await self.runtime.cancel_waiting(thread)
        await writer.status(pb.TASK_STATE_CANCELED, "cancelled by the client")


def _prompt(message: pb.Message) -> str:
    text = message_text(message).strip()
    extra = [d for d in data_parts(message) if d]
    if extra:
        text = f"{text}\n\nContext:\n{json.dumps(extra, indent=2)}".strip()
    return text


def _pending(task: pb.Task) -> list[ResumeTicket]:
    """The tickets the task's input-required status message carries."""
    for item in data_parts(task.status.message):
        if isinstance(item, dict) and isinstance(item.get(TICKETS_KEY), list):
            return [
                ResumeTicket.model_validate(from_wire(ResumeTicket, t)) for t in item[TICKETS_KEY]
            ]
    return []
