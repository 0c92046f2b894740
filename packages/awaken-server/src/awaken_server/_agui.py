"""AG-UI 1.0: the transcoder from AgentEvents to AG-UI events.

``RUN_STARTED`` (with the protocol version) and the one terminal event echo the
client's ``threadId``/``runId``; ``RUN_STARTED`` also carries the server's run
id as ``metadata.awakenRunId`` (what ``POST /v1/runs/{id}/cancel`` takes). A
suspended run ends with ``RUN_FINISHED`` outcome ``interrupt``, one interrupt
per ticket (interrupt id = ticket id). The thread's state goes out as
``STATE_SNAPSHOT`` and JSON-patch ``STATE_DELTA``.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui import core as ag

from awaken_runtime import (
    AgentEvent,
    Cancelled,
    Error,
    MergePolicy,
    Phase,
    RunFinish,
    Scope,
    StepEnd,
    StepStart,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)

from ._ids import new_id

__all__ = ["AGUITranscoder"]


class AGUITranscoder:
    """Turns one run's AgentEvents into AG-UI events (stateful, one per stream)."""

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        state: dict[str, Any],
        *,
        server_run_id: str | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.server_run_id = server_run_id
        """The run's id on this server (the client's ``runId`` is only echoed)."""
        self.state = dict(state)
        self._text: str | None = None
        self._last_text: str | None = None  # a tool call after text joins that message
        self._reasoning: str | None = None
        self._step: str | None = None
        self._root: str | None = None
        self._finish: RunFinish | None = None

    def start(self) -> list[ag.BaseEvent]:
        """``RUN_STARTED`` (with the protocol version) and the thread's state."""
        return [
            ag.RunStartedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                protocol_version=ag.PROTOCOL_VERSION,
                metadata=(
                    {"awakenRunId": self.server_run_id} if self.server_run_id is not None else None
                ),
            ),
            ag.StateSnapshotEvent(snapshot=self.state),
        ]

    def _close_text(self) -> list[ag.BaseEvent]:
        out: list[ag.BaseEvent] = []
        if self._text is not None:
            out.append(ag.TextMessageEndEvent(message_id=self._text))
            self._last_text, self._text = self._text, None
        if self._reasoning is not None:
            out.append(ag.ReasoningMessageEndEvent(message_id=self._reasoning))
            out.append(ag.ReasoningEndEvent(message_id=self._reasoning))
            self._reasoning = None
        return out

    def _end_step(self) -> list[ag.BaseEvent]:
        out = self._close_text()
        if self._step is not None:
            out.append(ag.StepFinishedEvent(step_name=self._step))
            self._step = None
        return out

    def feed(self, event: AgentEvent) -> list[ag.BaseEvent]:
        """The AG-UI events for one AgentEvent."""
        if self._root is None:
            self._root = event.run_id
        if event.run_id != self._root:
            return []
        if isinstance(event, StepStart):
            out = self._end_step()
            self._last_text = None
            self._step = f"step {event.step}"
            return [*out, ag.StepStartedEvent(step_name=self._step)]
        if isinstance(event, TextDelta):
            return self._delta(event)
        if isinstance(event, ToolCallReady):
            return [
                *self._close_text(),
                ag.ToolCallStartEvent(
                    tool_call_id=event.call_id,
                    tool_call_name=event.name,
                    parent_message_id=self._text or self._last_text,
                ),
                ag.ToolCallArgsEvent(tool_call_id=event.call_id, delta=json.dumps(event.arguments)),
                ag.ToolCallEndEvent(tool_call_id=event.call_id),
            ]
        if isinstance(event, ToolCallDone):
            if event.outcome == "suspended":
                return []
            return [
                *self._close_text(),
                ag.ToolCallResultEvent(
                    message_id=new_id("msg_"),
                    tool_call_id=event.call_id,
                    content=event.output,
                    role="tool",
                ),
            ]
        if isinstance(event, StepEnd):
            return [*self._end_step(), *self._state_delta(event)]
        if isinstance(event, RunFinish):
            self._finish = event
            return self._end_step()
        return []

    def _delta(self, event: TextDelta) -> list[ag.BaseEvent]:
        out: list[ag.BaseEvent] = []
        if event.channel == "text":
            if self._reasoning is not None:
                out.extend(self._close_text())
            if self._text is None:
                self._text = new_id("msg_")
                out.append(ag.TextMessageStartEvent(message_id=self._text, role="assistant"))
            out.append(ag.TextMessageContentEvent(message_id=self._text, delta=event.delta))
            return out
        if self._text is not None:
            out.extend(self._close_text())
        if self._reasoning is None:
            self._reasoning = new_id("rsn_")
            out.append(ag.ReasoningStartEvent(message_id=self._reasoning))
            out.append(ag.ReasoningMessageStartEvent(message_id=self._reasoning, role="reasoning"))
        out.append(ag.ReasoningMessageContentEvent(message_id=self._reasoning, delta=event.delta))
        return out

    def _state_delta(self, event: StepEnd) -> list[ag.BaseEvent]:
        ops: list[dict[str, Any]] = []
        for command in event.state_delta:
            if command.scope is not Scope.THREAD:
                continue
            key = str(command.key)
            path = "/" + _pointer(key)
            if command.action.kind == "remove":
                if key in self.state:
                    ops.append({"op": "remove", "path": path})
                    self.state.pop(key)
                continue
            value = command.action.value
            current = self.state.get(key)
            if (
                command.merge is MergePolicy.COMMUTATIVE
                and isinstance(value, dict)
                and isinstance(current, dict)
            ):
                # The store shallow-merges these: patch the members, keep the others.
                for member, item in value.items():
                    ops.append(
                        {"op": "add", "path": f"{path}/{_pointer(str(member))}", "value": item}
                    )
                self.state[key] = {**current, **value}
                continue
            ops.append(
                {"op": "replace" if key in self.state else "add", "path": path, "value": value}
            )
            self.state[key] = value
        return [ag.StateDeltaEvent.model_validate({"delta": ops})] if ops else []

    def close(self, error: BaseException | None = None) -> list[ag.BaseEvent]:
        """Exactly one terminal event."""
        out = self._end_step()
        finish = self._finish
        ids = {"thread_id": self.thread_id, "run_id": self.run_id}
        if finish is None:
            text = f"the run failed: {error}" if error is not None else "the run did not finish"
            return [*out, ag.RunErrorEvent(message=text)]
        if finish.phase is Phase.WAITING:
            interrupts = [
                ag.Interrupt(
                    id=t.ticket_id,
                    reason=t.await_reason.value,
                    tool_call_id=t.call.id,
                    message=f"approve the call {t.call.name}({json.dumps(t.call.arguments)})?",
                    expires_at=t.deadline.isoformat() if t.deadline else None,
                )
                for t in finish.tickets
            ]
            outcome: Any = ag.RunFinishedInterruptOutcome(type="interrupt", interrupts=interrupts)
            return [*out, ag.RunFinishedEvent(**ids, outcome=outcome)]
        if isinstance(finish.end_cause, Error):
            return [*out, ag.RunErrorEvent(message=str(finish.end_cause.failure))]
        if isinstance(finish.end_cause, Cancelled):
            cancelled = ag.RunFinishedCancelledOutcome(type="cancelled")
            return [*out, ag.RunFinishedEvent(**ids, outcome=cancelled)]
        success = ag.RunFinishedSuccessOutcome(type="success")
        return [*out, ag.RunFinishedEvent(**ids, result=finish.final_text, outcome=success)]


def _pointer(token: str) -> str:
    """One JSON Pointer reference token (RFC 6901 escaping)."""
    return token.replace("~", "~0").replace("/", "~1")
