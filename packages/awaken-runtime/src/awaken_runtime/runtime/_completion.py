"""``Runtime.run_to_completion``: run, then answer every ticket inline until the run ends."""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..lifecycle._failures import Phase
from ..lifecycle._run_state import RunState

if TYPE_CHECKING:
    from ._runtime import OnAwait, RunInput, Runtime
    from ._streaming import EventSink

__all__ = ["drive"]


async def drive(
    runtime: Runtime,
    agent: Any,
    input: RunInput,
    on_await: OnAwait,
    on_event: EventSink | None,
    **kwargs: Any,
) -> RunState:
    """Run ``agent``, then resume each ticket with ``on_await``'s decision until it ends.

    Scheduled calls are resumed when due (this sleeps until then); an
    ``on_await`` that returns ``None`` leaves the run waiting.
    """
    state = await runtime.run(agent, input, on_event=on_event, **kwargs)
    while state.phase is Phase.WAITING and state.tickets:
        ticket = state.tickets[0]
        decision = on_await(ticket)
        if inspect.isawaitable(decision):
            decision = await decision
        if decision is None:
            return state
        if ticket.not_before is not None:
            delay = (ticket.not_before - datetime.now(UTC)).total_seconds()
            if delay > 0:
                await asyncio.sleep(delay)
        state = await runtime.resume(ticket, decision, on_event=on_event)
    return state
