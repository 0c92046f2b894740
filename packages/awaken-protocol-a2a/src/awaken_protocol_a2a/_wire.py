"""What awaken runs look like on the A2A wire: states, parts, the metadata keys both ends read.

Both ends of this package agree on a few metadata keys so that an awaken
parent talking to an awaken child loses nothing: ``awaken.event`` (an
``AgentEvent`` as JSON on a WORKING status update), ``awaken.usage`` (the
run's token usage and cost on its last status update) and ``awaken.tickets``
(the parked calls on an INPUT_REQUIRED status message). Any other A2A peer
sees plain text: the answer streams as the ``response`` artifact, and the
question of an input-required task is the status message's text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct, Value

from awaken_runtime import ResumeTicket

__all__ = [
    "EVENT_KEY",
    "INTERRUPTED",
    "RESPONSE_ARTIFACT",
    "SEQ_KEY",
    "TERMINAL",
    "TICKETS_KEY",
    "USAGE_KEY",
    "data_part",
    "data_parts",
    "message_text",
    "question",
    "status_now",
    "struct",
    "task_from_json",
    "task_to_json",
    "text_part",
]

EVENT_KEY = "awaken.event"
USAGE_KEY = "awaken.usage"
SEQ_KEY = "awaken.seq"
TICKETS_KEY = "awaken.tickets"
RESPONSE_ARTIFACT = "response"
"""The artifact id the answer's text streams into."""

TERMINAL = frozenset(
    {
        pb.TASK_STATE_COMPLETED,
        pb.TASK_STATE_CANCELED,
        pb.TASK_STATE_FAILED,
        pb.TASK_STATE_REJECTED,
    }
)
INTERRUPTED = frozenset({pb.TASK_STATE_INPUT_REQUIRED, pb.TASK_STATE_AUTH_REQUIRED})


def status_now(state: int, at: datetime | None = None) -> pb.TaskStatus:
    """A task status of ``state``, timestamped ``at`` (default: now; A2A times are UTC)."""
    status = pb.TaskStatus(state=state)  # type: ignore[arg-type]
    status.timestamp.FromDatetime((at or datetime.now(UTC)).astimezone(UTC))
    return status


def struct(data: dict[str, Any]) -> Struct:
    """A protobuf ``Struct`` of JSON data."""
    out = Struct()
    out.update(data)
    return out


def text_part(text: str) -> pb.Part:
    """A text part."""
    return pb.Part(text=text)


def data_part(data: dict[str, Any]) -> pb.Part:
    """A data (JSON object) part."""
    return pb.Part(data=Value(struct_value=struct(data)))


def message_text(message: pb.Message) -> str:
    """The text parts of ``message``, joined by newlines."""
    return "\n".join(p.text for p in message.parts if p.HasField("text"))


def data_parts(message: pb.Message) -> list[Any]:
    """The JSON values of ``message``'s data parts."""
    return [MessageToDict(p.data) for p in message.parts if p.HasField("data")]


def task_to_json(task: pb.Task) -> dict[str, Any]:
    """A task as JSON data (the proto3 JSON mapping)."""
    data: dict[str, Any] = MessageToDict(task)
    return data


def task_from_json(data: dict[str, Any]) -> pb.Task:
    """A task from :func:`task_to_json` data."""
    task = pb.Task()
    ParseDict(data, task, ignore_unknown_fields=True)
    return task


def question(ticket: ResumeTicket) -> str:
    """What a person is asked for one parked call, in words."""
    inner = ticket.model_dump(mode="json")
    for _ in range(32):  # a sub-agent's ticket stands for its child's
        child = inner.get("payload", {}).get("child_ticket")
        if inner.get("await_reason") != "delegation" or not isinstance(child, dict):
            break
        inner = child
    call, payload = inner.get("call", {}), inner.get("payload", {})
    asked = payload.get("question") or payload.get("prompt") or payload.get("message")
    if inner.get("await_reason") == "tool_permission":
        why = payload.get("reason") or payload.get("rule")
        text = f"May I run {call.get('name', '?')} with {call.get('arguments', {})}?"
        text += f" ({why})" if why else ""
        return text + " Answer yes or no."
    if isinstance(asked, str) and asked:
        return asked
    return f"The call {call.get('name', '?')} waits for your answer."
