"""A step's bookkeeping around its phases: opening it, keeping its calls, recording its answer.

Plain functions of ``RunDeps`` and ``LegState`` that ``AgentLoop.step`` calls
in order; none awaits (a coroutine per part would cost more than the part).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._lazy import LazyModule
from ..messages._call_ids import call_ids_of, prepare_calls
from ..messages._message import PROVIDER_CALL_IDS, Message, ToolCall, new_id
from ..models._model import InferenceResponse, TokenUsage

if TYPE_CHECKING:
    from ..lifecycle import _events as events
    from ._deps import RunDeps
    from ._leg import LegState
else:  # runs nobody listens to never load the event classes (see _lazy.py)
    events = LazyModule("awaken_runtime.lifecycle._events")

__all__ = ["begin_step", "kept_calls", "record_answer", "step_metadata"]

_NO_USAGE = TokenUsage()


def begin_step(deps: RunDeps, leg: LegState) -> None:
    """Count the step, reset its figures, tell the stop tracker and emit ``StepStart``."""
    leg.step += 1
    leg.open_step = True
    leg.step_usage = _NO_USAGE
    leg.step_delta = []
    stop = leg.stop
    if stop is not None:
        stop.start_step()
    emit = deps.emit
    if emit is not None:
        emit(events.StepStart(seq=leg.next_seq(), run_id=deps.run_id, step=leg.step))


def kept_calls(
    leg: LegState, calls: list[ToolCall]
) -> tuple[list[ToolCall], dict[str, str] | None]:
    """The response's calls as the run keeps them, and the provider ids renamed (if any).

    Ids stay unique inside the run, and poison arguments become an argument
    error before anything is stored: hooks, results and tickets all see the
    calls as kept from here.
    """
    seen = leg.call_ids
    if seen is None:
        # Once per leg: the ids the store already indexed, else one scan of the thread.
        known = leg.history_call_ids
        seen = leg.call_ids = (
            set(known) if known is not None else call_ids_of(leg.transcript.view())
        )
    # Fresh ids and flat arguments, the usual case, need nothing more than this scan.
    added = 0
    for call in calls:
        cid = call.id
        if not cid or cid in seen:
            break
        for value in call.arguments.values():
            if isinstance(value, (dict, list)):
                break
        else:
            seen.add(cid)
            added += 1
            continue
        break
    if added == len(calls):
        return calls, None
    seen.difference_update(c.id for c in calls[:added])
    return prepare_calls(calls, seen)


def record_answer(
    deps: RunDeps,
    leg: LegState,
    response: InferenceResponse,
    calls: list[ToolCall],
    renamed: Mapping[str, str] | None,
) -> None:
    """Count the answer's usage and cost and append it to the transcript."""
    # Locals: each attribute read on a pydantic model takes its slow path.
    text, usage = response.text, response.usage
    stop = leg.stop
    if stop is not None:
        stop.on_text(text)
    leg.step_usage = usage
    leg.uncounted.append(usage)
    step_cost = deps.model.cost(usage)
    if step_cost is None:
        step_cost = response.cost  # the provider's own price table, if it knew the model
    if step_cost is not None:
        leg.cost = (leg.cost or 0.0) + step_cost
    leg.transcript.append(
        Message(
            id=new_id(),
            role="assistant",
            content=text or None,
            tool_calls=list(calls) or None,
            metadata=step_metadata(response, renamed),
        )
    )


def step_metadata(
    response: InferenceResponse, renamed: Mapping[str, str] | None
) -> dict[str, object]:
    """The assistant message's metadata: finish reason, reasoning, the provider's call ids."""
    metadata: dict[str, object] = {"finish_reason": response.finish_reason}
    reasoning = response.reasoning
    if reasoning:
        metadata["reasoning"] = reasoning
    if renamed:
        metadata[PROVIDER_CALL_IDS] = renamed
    return metadata
