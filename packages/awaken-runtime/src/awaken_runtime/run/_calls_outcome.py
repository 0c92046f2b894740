"""What running one response's tool calls produced: results, parked calls, held messages.

``ToolCallExecutor.run_calls`` returns a ``CallsOutcome``; the step loop reads
it (a step with parked calls parks; otherwise the held AFTER_TOOL messages
follow the results). A resumed leg gives the executor the one outcome it keeps
for its decided calls, seeded with the messages the parked step held.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from datetime import datetime

    from ..messages._message import Message, ToolCall
    from ..plugins._await import AwaitReason
    from ..tools._tool import ToolOutput

__all__ = ["CallsOutcome", "Outcome", "Parked"]

Outcome = Literal["success", "error", "blocked", "short_circuit", "suspended"]
"""How one call ended, as its ``ToolCallDone`` event says."""


class Parked:
    """A call waiting for a decision, before it becomes a ticket."""

    # A plain class, not a dataclass: generating a dataclass's methods at import costs
    # more than a short run itself (see tests/runtime/test_working_import.py).
    __slots__ = ("call", "deadline", "not_before", "payload", "reason")

    def __init__(
        self,
        call: ToolCall,
        reason: AwaitReason,
        payload: dict[str, Any],
        deadline: datetime | None = None,
        not_before: datetime | None = None,
    ) -> None:
        self.call = call
        self.reason = reason
        self.payload = payload
        self.deadline = deadline
        self.not_before = not_before


class CallsOutcome:
    """The calls that got a result, the calls parked, and the AFTER_TOOL messages held.

    ``results``: ``(call, output, outcome)`` in the order the results were
    appended to the transcript. ``held``: messages AFTER_TOOL hooks returned,
    kept out of the transcript so the step's tool results stay contiguous.
    """

    __slots__ = ("held", "parked", "results")

    def __init__(self, held: Sequence[Message] = ()) -> None:
        self.results: list[tuple[ToolCall, ToolOutput, Outcome]] = []
        self.parked: list[Parked] = []
        self.held: list[Message] = list(held)

    def __repr__(self) -> str:
        return (
            f"CallsOutcome(results={[(c.id, o) for c, _, o in self.results]}, "
            f"parked={[p.call.id for p in self.parked]}, held={len(self.held)})"
        )
