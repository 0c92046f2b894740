"""Calls held open across a suspension: a stock ``ctx.elicit`` answered through a ticket.

On a handshake-era connection (stdio, session-ful HTTP) a server tool that
calls ``ctx.elicit`` sends ``elicitation/create`` while its ``tools/call`` is
still open, and waits for the answer on that back-channel. Each call runs in
a task of the connection's loop (a :class:`HeldCall`), so when the server
asks, the tool can park its run (``SuspendCall(USER_INPUT)``) while the call
and the server's question stay open. The human answers the ticket; the
runtime runs the tool again (``ANSWER_TO_TOOL``) under the same call key
(``ToolCallContext.idempotency_key``), which finds the held call and sends
the answer back on the open request.

A question that nobody answers within ``elicit_timeout`` is answered
``cancel`` (the server's tool goes on, its result is dropped); a later
answer, like one given in another process, makes the call anew and answers
the server's first question with it at once (``prefilled``).

Which call asked: neither stdio nor the handshake era says, so a question is
routed to the one call in flight on the connection that is not already
waiting for an answer; while several are, it waits for them to narrow to
one (bounded by ``elicit_timeout``), and refuses the question when they do
not: guessing could show one run's question to another run's user.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

__all__ = ["Backchannel", "HeldCall", "elicit_result"]


@dataclass(eq=False)
class HeldCall:
    """One ``tools/call`` in flight, and the question its server is waiting on (if any)."""

    key: str
    tool: str
    task: asyncio.Task[types.CallToolResult]
    owner: Any = None
    """The connection's client the call runs on."""
    prefilled: Any = None
    """An answer to give the server's first question at once (a resume that found no open call)."""
    question: types.ElicitRequestParams | None = None
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    answer: asyncio.Future[types.ElicitResult] | None = None


def elicit_result(value: Any, params: types.ElicitRequestParams | None) -> types.ElicitResult:
    """The server's answer from a ``Respond`` value.

    ``{"action": "decline"}`` or ``{"action": "cancel"}`` declines; a URL-mode
    question is accepted without content; otherwise the value is the form's
    content (a non-object value becomes ``{"value": ...}``), and a field it
    leaves out that the form gives a ``default`` takes that default.
    """
    if (
        isinstance(value, dict)
        and set(value) == {"action"}
        and value["action"]
        in (
            "decline",
            "cancel",
        )
    ):
        return types.ElicitResult(action=value["action"])
    if isinstance(params, types.ElicitRequestURLParams):
        return types.ElicitResult(action="accept")
    content = dict(value) if isinstance(value, dict) else {"value": value}
    if isinstance(params, types.ElicitRequestFormParams):
        # Fields the user left out take the form's defaults (SEP-1034).
        properties = params.requested_schema.get("properties") or {}
        for name, spec in properties.items():
            if isinstance(spec, dict) and "default" in spec and name not in content:
                content[name] = spec["default"]
    return types.ElicitResult(action="accept", content=content)


class Backchannel:
    """The held calls of one connection and its ``elicitation/create`` callback."""

    def __init__(self, server_id: str, elicit_timeout: float) -> None:
        self.server_id = server_id
        self.elicit_timeout = elicit_timeout
        self.calls: dict[str, HeldCall] = {}

    def start(
        self, key: str, tool: str, work: Any, *, prefilled: Any = None, owner: Any = None
    ) -> HeldCall:
        """Run ``work`` (the call's coroutine) as a held call under ``key``."""
        task: asyncio.Task[types.CallToolResult] = asyncio.get_running_loop().create_task(
            work, name=f"mcp:{self.server_id}:{tool}"
        )
        held = self.calls[key] = HeldCall(key, tool, task, owner=owner, prefilled=prefilled)
        task.add_done_callback(lambda _t: self._done(held))
        return held

    def _done(self, held: HeldCall) -> None:
        if self.calls.get(held.key) is held:
            del self.calls[held.key]
        if not held.task.cancelled():
            held.task.exception()  # retrieved: a call parked when it failed has no waiter

    def give(self, held: HeldCall, value: Any) -> None:
        """Send the human's answer back on the open call."""
        future, params = held.answer, held.question
        held.question = held.answer = None
        held.asked.clear()  # now, not when the callback resumes: the caller waits again at once
        if future is not None and not future.done():
            future.set_result(elicit_result(value, params))

    def cancel_all(self) -> None:
        """Cancel every held call (the connection is closing)."""
        for held in list(self.calls.values()):
            held.task.cancel()
        self.calls.clear()

    async def on_elicit(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK's elicitation callback: route the question to its call, wait for the answer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.elicit_timeout
        while True:
            open_calls = [
                c for c in self.calls.values() if not c.task.done() and c.question is None
            ]
            if len(open_calls) == 1:
                break
            if not open_calls:
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message="awaken has no call in flight to ask its user about",
                )
            if loop.time() >= deadline:
                return types.ErrorData(
                    code=types.INVALID_REQUEST,
                    message=(
                        f"awaken cannot tell which of the {len(open_calls)} calls in flight on "
                        f"this connection asks (the transport does not say), so it does not "
                        f"show the question to anyone; ask again when the others are done"
                    ),
                )
            await asyncio.sleep(0.02)
        held = open_calls[0]
        if held.prefilled is not None:
            value, held.prefilled = held.prefilled, None
            return elicit_result(value, params)
        future: asyncio.Future[types.ElicitResult] = loop.create_future()
        held.question, held.answer = params, future
        held.asked.set()
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.elicit_timeout)
        except TimeoutError:
            return types.ElicitResult(action="cancel")
        finally:
            if held.answer is future:
                held.question = held.answer = None
                held.asked.clear()
            with contextlib.suppress(Exception):
                future.cancel()
