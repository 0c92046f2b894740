"""One ACP prompt turn: a run leg, its permission asks answered inline, and its cancel.

The run's events become ``session/update`` notifications in order (a queue
and one sender task: the runtime's event sink is synchronous). When the run
parks on a permission ask the turn sends ``session/request_permission`` while
``session/prompt`` is still open and resumes the run with the answer; the
prompt's response goes out only after every update of the turn was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any, Protocol

from acp import RequestError
from acp.helpers import text_block, tool_content, update_agent_message_text, update_tool_call
from acp.schema import PromptResponse, RequestPermissionResponse, ToolCallUpdate

from awaken_runtime import (
    AgentEvent,
    Approve,
    AwaitReason,
    CancellationToken,
    Decision,
    Deny,
    Error,
    Phase,
    ResumeTicket,
    RunState,
    Runtime,
    ToolCallDone,
    ToolCallReady,
)

from ._permission import OPTIONS, decision_for, is_permission_ask, permission_call
from ._updates import SessionUpdate, stop_reason, updates_for

__all__ = ["Client", "Turn"]

log = logging.getLogger("awaken_protocol_acp")


class Client(Protocol):
    """The two client methods a turn calls (``acp``'s ``AgentSideConnection`` has them)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Send one ``session/update`` notification."""

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        """Ask the user; resolves with the option they picked, or cancelled."""


class Turn:
    """The prompt turn running on one session; ``cancel()`` ends it as ``cancelled``."""

    def __init__(self, runtime: Runtime, agent_id: str, client: Client, session_id: str) -> None:
        self.runtime = runtime
        self.agent_id = agent_id
        self.client = client
        self.session_id = session_id
        self.token = CancellationToken()
        self._updates: asyncio.Queue[SessionUpdate] = asyncio.Queue()
        self._unanswerable = False
        self._announced: set[str] = set()
        self._open: dict[str, None] = {}  # announced calls without a result yet, in order

    def cancel(self) -> None:
        """``session/cancel``: stop the model and tools, answer pending asks as cancelled."""
        self.token.cancel("cancelled by the client (session/cancel)")

    def _sink(self, event: AgentEvent) -> None:
        if isinstance(event, ToolCallReady):
            # A resumed leg announces its parked calls again; the client knows them.
            if event.call_id in self._announced:
                return
            self._announced.add(event.call_id)
            self._open[event.call_id] = None
        elif isinstance(event, ToolCallDone) and event.outcome != "suspended":
            self._open.pop(event.call_id, None)
        for update in updates_for(event):
            self._updates.put_nowait(update)

    async def _send_updates(self) -> None:
        while True:
            update = await self._updates.get()
            try:
                await self.client.session_update(self.session_id, update)
            except Exception:  # a closed connection: the run still finishes and is stored
                log.warning("could not send a session/update", exc_info=True)
            finally:
                self._updates.task_done()

    async def run(self, text: str) -> PromptResponse:
        """Run the agent on ``text`` and answer its asks; the prompt's response."""
        sender = asyncio.create_task(self._send_updates())
        try:
            state = await self.runtime.run(
                self.agent_id,
                text,
                thread_id=self.session_id,
                cancel=self.token,
                on_event=self._sink,
            )
            state = await self._answer_asks(state)
            self._close_open_calls()
            await self._updates.join()
        finally:
            sender.cancel()
        return self._response(state)

    def _close_open_calls(self) -> None:
        """Calls the turn showed but never finished (cancelled while running or asking)
        end as failed, so the client shows no call as still pending."""
        for call_id in self._open:
            self._updates.put_nowait(
                update_tool_call(
                    call_id,
                    status="failed",
                    content=[tool_content(text_block("cancelled with the turn"))],
                )
            )
        self._open.clear()

    def _response(self, state: RunState) -> PromptResponse:
        cause = state.end_cause
        if isinstance(cause, Error):
            failure = cause.failure
            raise RequestError(
                -32603,
                f"the run failed ({failure.kind}): {failure.message}",
                {"runId": state.run_id, "failure": failure.model_dump(mode="json")},
            )
        if self._unanswerable:
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason=stop_reason(state))

    async def _answer_asks(self, state: RunState) -> RunState:
        while state.phase is Phase.WAITING and state.tickets:
            ticket = state.tickets[0]
            if self.token.cancelled:
                return await self._cancel_waiting()
            if ticket.await_reason is AwaitReason.SCHEDULED_ACTION and ticket.not_before:
                if not await self._until(ticket.not_before):
                    return await self._cancel_waiting()
                state = await self.runtime.resume(
                    ticket, Approve(by="schedule"), cancel=self.token, on_event=self._sink
                )
                continue
            if not is_permission_ask(ticket):
                return await self._give_up(ticket)
            await self._updates.join()  # the tool_call goes out before the ask about it
            decision = await self._ask(ticket)
            if decision is None or self.token.cancelled:  # an answer racing session/cancel
                self.cancel()
                return await self._cancel_waiting()
            if isinstance(decision, Approve):
                self._updates.put_nowait(update_tool_call(ticket.call.id, status="in_progress"))
            state = await self.runtime.resume(
                ticket, decision, cancel=self.token, on_event=self._sink
            )
        return state

    async def _until(self, due: datetime) -> bool:
        """Sleep until ``due`` (a ``Schedule``-d call); ``False`` if the turn was cancelled."""
        delay = (due - datetime.now(UTC)).total_seconds()
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.token.wait(), delay)
        return not self.token.cancelled

    async def _ask(self, ticket: ResumeTicket) -> Decision | None:
        """The user's answer to one ask; ``None`` when cancelled (by them or session/cancel)."""
        ask = asyncio.ensure_future(
            self.client.request_permission(
                session_id=self.session_id, tool_call=permission_call(ticket), options=OPTIONS
            )
        )
        cancelled = asyncio.ensure_future(self.token.wait())
        try:
            await asyncio.wait({ask, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
        if not ask.done():
            # session/cancel won the race; a late answer from the client is ignored.
            ask.cancel()
            return None
        try:
            response = ask.result()
        except Exception as exc:  # the client could not ask: nothing runs without a yes
            log.warning("session/request_permission failed: %s", exc)
            return Deny(reason=f"the client could not ask for permission: {exc}", by="acp")
        return decision_for(response)

    async def _cancel_waiting(self) -> RunState:
        return await self.runtime.cancel_waiting(self.session_id, on_event=self._sink)

    async def _give_up(self, ticket: ResumeTicket) -> RunState:
        """A wait ACP has no way to answer (a question, an external event): end it, say why."""
        reason = ticket.await_reason.value
        log.warning(
            "run %s waits for %s, which ACP cannot answer; cancelling it", ticket.run_id, reason
        )
        self._updates.put_nowait(
            update_agent_message_text(
                f"\n\n(The agent waited for {reason.replace('_', ' ')} on {ticket.call.name}, "
                f"which this client cannot provide; the run was ended.)"
            )
        )
        self._unanswerable = True
        return await self._cancel_waiting()
