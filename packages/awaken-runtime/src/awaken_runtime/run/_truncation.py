"""A final answer cut off by the output limit (``finish_reason=length``).

Such an answer is not a natural end. ``AgentConfig.truncation`` decides:
``stop`` ends the run ``Stopped`` (the partial answer stays in the thread);
``continue`` asks the model to go on from where it stopped, and the pieces
join into one ``final_text`` when an answer finally ends on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lifecycle._failures import Stopped
from ..messages._message import Message

if TYPE_CHECKING:
    from ._deps import RunDeps
    from ._leg import LegState

__all__ = ["CONTINUE_PROMPT", "truncated"]

CONTINUE_PROMPT = (
    "Your answer was cut off by the output limit. Continue exactly where it stopped, "
    "without repeating anything."
)


def truncated(deps: RunDeps, leg: LegState, text: str) -> Stopped | None:
    """The end of a step whose final answer ``text`` was truncated (``None``: go on)."""
    limit = deps.params.max_output_tokens or deps.model.max_output_tokens
    if deps.config.truncation == "continue":
        leg.continued += text
        leg.transcript.append(Message.user(CONTINUE_PROMPT))
        return None
    cap = f" (max_output_tokens={limit})" if limit else ""
    return Stopped(
        reason=(
            f"truncated: the model's answer hit its output limit{cap}, finish_reason=length; "
            f"raise max_output_tokens or set the agent's truncation = 'continue'"
        )
    )
