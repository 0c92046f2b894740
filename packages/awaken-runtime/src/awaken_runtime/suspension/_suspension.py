"""Suspension and resume: tickets and the parked-run record (decisions: ``_decisions``).

A gate (``Suspend``/``Schedule``) or a tool (``raise SuspendCall(...)``) can
park a tool call. The loop first runs every other call of the step, commits,
and stores a :class:`ParkedRun` with one :class:`ResumeTicket` per parked call
in the thread store. A client answers each ticket with a decision through
``Runtime.resume``; the runtime trusts only its stored copy of the ticket and
accepts a decision only when every field the client sends matches it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._defaults import new_list
from .._errors import AwakenError
from ..messages._message import Message, ToolCall
from ..models._model import TokenUsage
from ..plugins._await import AwaitReason

__all__ = [
    "ANSWER_TO_TOOL",
    "ParkedRun",
    "ResumeRejected",
    "ResumeTicket",
    "SuspendCall",
    "ThreadBusy",
]


ANSWER_TO_TOOL = "answer_to_tool"
"""``SuspendCall`` payload key: ``True`` makes a ``Respond`` run the tool again with
``ctx.decision`` set to it (the tool uses the answer) instead of being the result."""


class SuspendCall(Exception):
    """Raise from a tool to park its call until a decision arrives.

    ``payload`` is JSON data shown to whoever decides (a question, a form).
    A ``Respond(value)`` decision then becomes the call's result; with
    ``payload[ANSWER_TO_TOOL] = True`` the tool runs again instead, with
    ``ctx.decision`` that ``Respond`` (e.g. a form a remote tool asked for).
    """

    def __init__(
        self,
        await_reason: AwaitReason = AwaitReason.USER_INPUT,
        payload: dict[str, Any] | None = None,
        *,
        deadline: datetime | None = None,
    ) -> None:
        super().__init__(f"tool call suspended ({await_reason.value})")
        self.await_reason = await_reason
        self.payload = payload or {}
        self.deadline = deadline


class ResumeRejected(AwakenError):
    """A resume was refused; nothing changed. ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"resume rejected: {reason}")


class ThreadBusy(AwakenError):
    """The thread has a run waiting for decisions (or another active run)."""


class ResumeTicket(BaseModel):
    """The reference a client holds for one parked tool call (JSON)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    ticket_id: str
    """The correlation id: unique per parked call."""
    run_id: str
    thread_id: str
    snapshot_id: str
    """Identifies the checkpoint at which the run parked."""
    fingerprint: str
    """The agent's catalog fingerprint when it parked."""
    await_reason: AwaitReason
    call: ToolCall
    payload: dict[str, Any] = Field(default_factory=dict)
    deadline: datetime | None = None
    not_before: datetime | None = None
    """For ``Schedule``: the call may not resume earlier."""
    trace: dict[str, str] = Field(default_factory=dict)
    """The tracing context of the leg that parked the call (``RunObservation.trace``,
    e.g. W3C ``traceparent``), so the leg that resumes it continues the same trace.
    Empty without an observer."""
    signature: str | None = None

    def body(self) -> bytes:
        """Canonical bytes of every field but the signature (what is signed)."""
        data = self.model_dump(mode="json", exclude={"signature"})
        return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()

    def signed(self, secret: bytes) -> ResumeTicket:
        """A copy carrying an HMAC-SHA256 signature under ``secret``."""
        mac = hmac.new(secret, self.body(), hashlib.sha256).hexdigest()
        return self.model_copy(update={"signature": mac})

    def verify(self, secret: bytes) -> bool:
        """Whether the signature matches the fields under ``secret``."""
        if self.signature is None:
            return False
        expected = hmac.new(secret, self.body(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, self.signature)

    def mismatch(self, other: ResumeTicket) -> str | None:
        """The first field where ``other`` differs from this (stored) ticket."""
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        for name in type(self).model_fields:
            if mine[name] != theirs[name]:
                return name
        return None

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the deadline has passed."""
        return self.deadline is not None and (now or datetime.now(UTC)) > self.deadline


class ParkedRun(BaseModel):
    """Everything needed to continue a waiting run in any process."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    run_id: str
    agent_id: str
    fingerprint: str
    snapshot_id: str
    thread_id: str
    profile_id: str
    namespace: str
    step: int
    seq: int
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    run_state: list[tuple[str, Any]] = Field(default_factory=new_list)
    """Run-scope state at the park: ``(key, value)`` pairs."""
    tickets: list[ResumeTicket]
    """Tickets still waiting for a decision."""
    held_messages: list[Message] = Field(default_factory=new_list)
    """AFTER_TOOL hook messages of the step, appended once all its calls are answered."""
