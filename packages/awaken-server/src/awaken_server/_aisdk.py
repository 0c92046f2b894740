"""AI SDK v6 UI message stream: the transcoder from AgentEvents to its chunks.

A suspended call becomes ``tool-approval-request`` (approval id = the ticket
id); tool chunks carry ``dynamic: true`` (the client knows no tools statically).
The ``start`` and ``finish`` chunks carry the server's run id as message
metadata (``{"runId": ...}``), so a front end can cancel the run explicitly.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from awaken_runtime import (
    AgentEvent,
    Cancelled,
    Error,
    MaxSteps,
    NaturalEnd,
    Phase,
    RunFinish,
    StepEnd,
    StepStart,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)

__all__ = ["UIMessageStreamTranscoder"]


class UIMessageStreamTranscoder:
    """Turns one run's AgentEvents into UI message stream chunks (stateful, one per stream)."""

    def __init__(
        self, message_id: str, denied: set[str] | None = None, *, run_id: str | None = None
    ) -> None:
        self.message_id = message_id
        self.run_id = run_id
        """The server's run id, sent as message metadata (``None``: no metadata)."""
        self.denied = denied or set()
        """Tool call ids the client denied: their results become ``tool-output-denied``."""
        self._open: dict[str, str] = {}  # channel -> open part id
        self._in_step = False
        self._root: str | None = None
        self._finish: RunFinish | None = None
        self._n = 0
        self._calls: set[str] = set()

    def start(self) -> list[dict[str, Any]]:
        """The chunks opening the stream."""
        return [{"type": "start", "messageId": self.message_id, **self._metadata()}]

    def _metadata(self) -> dict[str, Any]:
        return {"messageMetadata": {"runId": self.run_id}} if self.run_id is not None else {}

    def _close_parts(self) -> list[dict[str, Any]]:
        out = [{"type": f"{ch}-end", "id": pid} for ch, pid in self._open.items()]
        self._open.clear()
        return out

    def _end_step(self) -> list[dict[str, Any]]:
        out = self._close_parts()
        if self._in_step:
            out.append({"type": "finish-step"})
            self._in_step = False
        return out

    def feed(self, event: AgentEvent) -> list[dict[str, Any]]:
        """The chunks for one event."""
        if self._root is None:
            self._root = event.run_id
        if event.run_id != self._root:
            return []  # sub-agent events: their outcome arrives as the delegating call's result
        if isinstance(event, StepStart):
            out = self._end_step()
            self._in_step = True
            return [*out, {"type": "start-step"}]
        if isinstance(event, TextDelta):
            out = []
            other = "reasoning" if event.channel == "text" else "text"
            if other in self._open:
                out.append({"type": f"{other}-end", "id": self._open.pop(other)})
            if event.channel not in self._open:
                self._n += 1
                self._open[event.channel] = pid = f"{self.message_id}-{self._n}"
                out.append({"type": f"{event.channel}-start", "id": pid})
            out.append(
                {
                    "type": f"{event.channel}-delta",
                    "id": self._open[event.channel],
                    "delta": event.delta,
                }
            )
            return out
        if isinstance(event, ToolCallReady):
            return [
                *self._close_parts(),
                *self._tool_input(event.call_id, event.name, event.arguments),
            ]
        if isinstance(event, ToolCallDone):
            return self._tool_done(event)
        if isinstance(event, StepEnd):
            return self._end_step()
        if isinstance(event, RunFinish):
            self._finish = event
            return self._end_step()
        return []

    def _tool_input(self, call_id: str, name: str, arguments: Any) -> list[dict[str, Any]]:
        self._calls.add(call_id)
        base = {"toolCallId": call_id, "toolName": name, "dynamic": True}
        return [
            {"type": "tool-input-start", **base},
            {"type": "tool-input-available", **base, "input": arguments},
        ]

    def _tool_done(self, event: ToolCallDone) -> list[dict[str, Any]]:
        out = self._close_parts()
        if event.outcome == "suspended":
            return out  # the approval request goes out when the run parks
        if event.call_id in self.denied:
            return [*out, {"type": "tool-output-denied", "toolCallId": event.call_id}]
        if event.outcome in ("success", "short_circuit"):
            output: Any = event.output
            with contextlib.suppress(ValueError):  # JSON results reach the UI as objects
                output = json.loads(event.output)
            return [
                *out,
                {
                    "type": "tool-output-available",
                    "toolCallId": event.call_id,
                    "output": output,
                    "dynamic": True,
                },
            ]
        return [
            *out,
            {
                "type": "tool-output-error",
                "toolCallId": event.call_id,
                "errorText": event.output,
                "dynamic": True,
            },
        ]

    def close(self, error: BaseException | None = None) -> list[dict[str, Any]]:
        """The chunks ending the stream (approval requests, ``error``, ``finish``)."""
        out = self._end_step()
        finish = self._finish
        if finish is None:
            text = (
                f"the run failed: {error}"
                if error is not None
                else "the run ended without finishing"
            )
            return [
                *out,
                {"type": "error", "errorText": text},
                self._finish_chunk("error"),
            ]
        if finish.phase is Phase.WAITING:
            for ticket in finish.tickets:
                if ticket.call.id not in self._calls:
                    # Parked in an earlier stream: announce it so the client has the part.
                    out.extend(
                        self._tool_input(ticket.call.id, ticket.call.name, ticket.call.arguments)
                    )
                out.append(
                    {
                        "type": "tool-approval-request",
                        "approvalId": ticket.ticket_id,
                        "toolCallId": ticket.call.id,
                    }
                )
            return [*out, self._finish_chunk("tool-calls")]
        cause = finish.end_cause
        if isinstance(cause, Error):
            out.append({"type": "error", "errorText": str(cause.failure)})
            return [*out, self._finish_chunk("error")]
        if isinstance(cause, Cancelled):
            return [*out, {"type": "abort"}]
        reason = "length" if isinstance(cause, MaxSteps) else "other"
        if isinstance(cause, NaturalEnd):
            reason = "stop"
        return [*out, self._finish_chunk(reason)]

    def _finish_chunk(self, reason: str) -> dict[str, Any]:
        return {"type": "finish", "finishReason": reason, **self._metadata()}
