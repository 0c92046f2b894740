"""Structured output in the loop: accepting, or sending back, the model's final result.

A step whose answer has no tool calls, or calls the output's final-result
tool, is a result attempt. A valid result ends the run like a natural end
(run-end guards still apply) with the JSON as ``final_text`` and the value as
``RunState.output``; an invalid one goes back to the model as an error it can
fix (a tool result on the tool path, a user message otherwise) until the
spec's ``retries`` are spent, then the run fails with ``OutputFailure``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..lifecycle._failures import OutputFailure
from ..messages._message import Message, ToolCall
from ..models._output import OutputSpec
from ._signals import fail

if TYPE_CHECKING:
    from ..messages._transcript import Transcript

__all__ = ["OutputCheck"]

_ACCEPTED = "Final result accepted."
_NOT_RUN = "Not run: this answer also gave the final result, which ends the run."


class OutputCheck:
    """One run leg's view of the agent's output spec and the attempts made."""

    __slots__ = ("attempts", "spec", "value")

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.attempts = 0
        self.value: Any = None

    def claims(self, calls: Sequence[ToolCall]) -> bool:
        """Whether the answer's tool calls include the final-result tool."""
        name = self.spec.name
        return any(call.name == name for call in calls)

    def settle(self, transcript: Transcript, text: str, calls: Sequence[ToolCall]) -> str | None:
        """The accepted result as JSON text, or ``None`` when the model must try again.

        Appends the answers the transcript needs (every call of the step gets a
        result) and, for an invalid result, the error the model sees next step.
        """
        spec = self.spec
        ours = next((c for c in calls if c.name == spec.name), None)
        if ours is not None:
            value, errors = ours.arguments, [ours.parse_error] if ours.parse_error else []
        else:
            value, errors = _parse_text(text)
        if not errors:
            errors = spec.errors(value)
        for call in calls:
            if call is not ours:
                transcript.append(Message.tool(call.id, _NOT_RUN, name=call.name))
        if not errors:
            if ours is not None:
                transcript.append(Message.tool(ours.id, _ACCEPTED, name=ours.name))
            self.value = value
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        self.attempts += 1
        if self.attempts > spec.retries:
            raise fail(
                OutputFailure(
                    attempts=self.attempts,
                    errors=tuple(errors),
                    message=(
                        f"the model's final result did not match the output schema "
                        f"{spec.name!r} after {self.attempts} attempts: {'; '.join(errors)}; "
                        f"raise OutputSpec.retries or make the schema or instructions clearer"
                    ),
                )
            )
        problems = "; ".join(errors)
        if ours is not None:
            transcript.append(
                Message.tool(
                    ours.id,
                    f"Invalid final result: {problems}. Call {spec.name} again with "
                    f"arguments that match its schema.",
                    name=ours.name,
                )
            )
        else:
            how = (
                f"call the {spec.name} tool with it"
                if spec.mode == "tool"
                else "answer with only a JSON value matching the schema"
            )
            transcript.append(
                Message.user(f"Your final result is not valid: {problems}. Fix it and {how}.")
            )
        return None


def _parse_text(text: str) -> tuple[Any, list[str]]:
    """The JSON value of a text answer (a fenced code block is unwrapped)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0].strip()
    if not body:
        return None, ["the answer is empty; give the final result as JSON"]
    try:
        return json.loads(body), []
    except ValueError as exc:
        return None, [f"the answer is not valid JSON ({exc})"]
