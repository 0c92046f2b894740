"""A step's final answer: how an answer without tool calls ends the step.

An answer without tool calls (or with the structured output's final-result
tool) is the final answer: validated into the agent's output when it declares
one (``_output.py``), stopped or continued when truncated (``_truncation.py``),
then put to the run-end guards, which may steer the run on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..lifecycle._failures import EndCause, NaturalEnd
from ..messages._message import Message, ToolCall
from ..models._model import InferenceResponse
from ._guards import run_end_guards
from ._truncation import truncated

if TYPE_CHECKING:
    from ._deps import RunDeps
    from ._leg import LegState
    from ._phases import PhaseEngine

__all__ = ["committed_answer", "final_answer"]


async def final_answer(
    deps: RunDeps,
    leg: LegState,
    phases: PhaseEngine,
    response: InferenceResponse,
    calls: Sequence[ToolCall],
) -> EndCause | None:
    """How a step whose answer is final ends: ``NaturalEnd``, another end, or ``None``
    (the run goes on: an invalid result, a continued truncation or a guard's steer)."""
    text = response.text
    output = leg.output
    if output is not None:
        final = output.settle(leg.transcript, text, calls)
        if final is None:
            return None  # an invalid result: the model fixes it next step
    elif response.finish_reason == "length":
        return truncated(deps, leg, text)
    else:
        final = leg.continued + text if leg.continued else text
    leg.final_text = final
    steer = await run_end_guards(deps, phases)
    if steer is None:
        return NaturalEnd()
    message = steer.message
    leg.transcript.append(Message.user(message) if isinstance(message, str) else message)
    return None


def committed_answer(leg: LegState, messages: Sequence[Message]) -> bool:
    """Whether ``messages`` (a thread a dead leg left ``RUNNING``) end with its final answer.

    A step's answer is checkpointed at its StepEnd, before the run's end record:
    a leg that died between the two left the answer committed and the run
    unfinished. Continuing it must end it (``NaturalEnd``, with that answer as
    ``final_text``), not ask the model again (a second answer). The last message
    tells: an assistant message without tool calls, not cut off (``length``), with
    nothing after it (a run-end guard's steer or a continue prompt follows the
    answer it answers). Agents with a structured output settle their answer in
    the step, so they are left to the step as before.
    """
    if not messages or leg.output is not None:
        return False
    last = messages[-1]
    if last.role != "assistant" or last.tool_calls:
        return False
    reason = last.metadata.get("finish_reason") if last.metadata else None
    if reason == "length":
        return False
    leg.final_text = last.text or ""
    leg.finish_reason = reason if isinstance(reason, str) else None
    return True
