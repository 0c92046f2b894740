"""``A2ADelegate``: a remote A2A agent as a delegate of awaken agents.

Register it for an agent id (``AgentRuntimeBuilder.with_remote_delegate(
"researcher", A2ADelegate(card_url, token=...))``) and list that id in an
agent's ``delegates``: ``agent_run`` then sends the prompt as an A2A message
and streams the remote task into the parent's stream (``RemoteLeg``). A
remote ``input-required`` parks the parent's call as ``Delegation``; the
parent's resume sends the decision as a follow-up message on the same task;
cancelling the parent (running or parked) cancels the remote task. A remote
that cannot be reached is retried (``attempts``, doubling ``backoff``), then
the call's result is an error the model sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from typing import Any

import httpx
from a2a.client import A2AClientError, ClientConfig, ClientFactory
from a2a.client.client import Client
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import A2AError
from google.protobuf.json_format import ParseDict

from awaken_runtime import AGENT_RUN, ChildOutcome, Decision, DelegationRequest, ResumeTicket

from ._camel import to_wire
from ._remote import RemoteLeg
from ._wire import data_part, text_part

__all__ = ["A2ADelegate"]


def _words(decision: Decision) -> str:
    """The decision as text, for peers that read only text parts."""
    if decision.kind == "approve":
        return "yes"
    if decision.kind == "deny":
        return "no"
    if decision.kind == "respond":
        return decision.value if isinstance(decision.value, str) else str(decision.value)
    return f"run it with {decision.arguments}"


class A2ADelegate:
    """The A2A agent whose card is at ``card_url``, reached with ``token`` (a bearer key)."""

    def __init__(
        self,
        card_url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        attempts: int = 3,
        backoff: float = 0.2,
        timeout: float = 300.0,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1 (got {attempts})")
        self.card_url = card_url
        self.attempts = attempts
        self.backoff = backoff
        self._headers = dict(headers or {})
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._client: Client | None = None
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def tool_id(self) -> str:
        """``agent_run``."""
        return AGENT_RUN

    def supports_parallel(self) -> bool:
        """Remote children may run concurrently."""
        return True

    async def _connect(self) -> Client:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # an httpx client is per loop
            http = httpx.AsyncClient(headers=self._headers, timeout=self._timeout)
            try:
                response = await http.get(self.card_url)
                response.raise_for_status()
                card = ParseDict(response.json(), pb.AgentCard(), ignore_unknown_fields=True)
            except BaseException:
                await http.aclose()
                raise
            config = ClientConfig(httpx_client=http, streaming=True)
            self._client, self._http, self._loop = ClientFactory(config).create(card), http, loop
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._http is not None:
            await self._http.aclose()
        self._client = self._http = None

    async def delegate(self, request: DelegationRequest) -> ChildOutcome:
        """Send the prompt as a new task and follow it to an end or ``input-required``."""
        message = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER)
        message.parts.append(text_part(request.prompt))
        if request.context:
            message.parts.append(data_part(dict(request.context)))
        return await self._exchange(request, message)

    async def resume(
        self, request: DelegationRequest, ticket: ResumeTicket, decision: Decision
    ) -> ChildOutcome:
        """Answer the remote task's question (``ticket``) and follow it on."""
        message = pb.Message(
            message_id=uuid.uuid4().hex,
            role=pb.ROLE_USER,
            task_id=ticket.run_id,
            context_id=ticket.thread_id,
        )
        answer = {"ticketId": ticket.ticket_id, "decision": to_wire(decision)}
        message.parts.extend([data_part(answer), text_part(_words(decision))])
        return await self._exchange(request, message)

    async def cancel_waiting_child(self, payload: dict[str, Any]) -> None:
        """Cancel the remote task a parked parent waits for (a finished one is left alone)."""
        task_id = str(payload.get("child_run_id") or "")
        if not task_id:
            return
        await _cancel_remote(await self._connect(), task_id)

    async def _exchange(self, request: DelegationRequest, message: pb.Message) -> ChildOutcome:
        failure: Exception | None = None
        for attempt in range(self.attempts):
            leg = RemoteLeg(request)
            try:
                return await self._follow(request, message, leg)
            except (A2AClientError, httpx.HTTPError) as exc:
                if leg.started or not _unreachable(exc):
                    return self._failed(request, leg, f"the remote agent failed: {exc}")
                failure = exc
                if attempt + 1 < self.attempts:
                    await asyncio.sleep(self.backoff * 2**attempt)
                self._client = None  # connect (and fetch the card) again
            except A2AError as exc:  # the remote refused the request (unknown task, ...)
                return self._failed(request, leg, f"the remote agent refused: {exc.message}")
        return self._failed(
            request,
            RemoteLeg(request),
            f"the remote agent at {self.card_url} is unreachable after {self.attempts} "
            f"attempt(s): {failure}",
        )

    def _failed(self, request: DelegationRequest, leg: RemoteLeg, reason: str) -> ChildOutcome:
        return ChildOutcome(
            agent_id=request.agent_id,
            run_id=leg.task_id,
            thread_id=leg.context_id,
            status="failed",
            reason=reason,
            usage=leg.usage,
            cost=leg.cost,
        )

    async def _follow(
        self, request: DelegationRequest, message: pb.Message, leg: RemoteLeg
    ) -> ChildOutcome:
        client = await self._connect()
        stream = client.send_message(pb.SendMessageRequest(message=message))
        cancelled = asyncio.ensure_future(request.cancel.wait())
        try:
            while True:
                step = asyncio.ensure_future(anext(stream))
                done, _ = await asyncio.wait({step, cancelled}, return_when="FIRST_COMPLETED")
                if step not in done:
                    step.cancel()
                    with contextlib.suppress(BaseException):
                        await step
                    await _cancel_remote(client, leg.task_id)
                    leg.state = pb.TASK_STATE_CANCELED
                    break
                try:
                    leg.read(step.result())
                except StopAsyncIteration:
                    break
                if leg.ended():
                    break
        except asyncio.CancelledError:
            # The parent's run interrupts its armed tool call when it is cancelled.
            await asyncio.shield(_cancel_remote(client, leg.task_id))
            raise
        finally:
            cancelled.cancel()
            with contextlib.suppress(BaseException):
                await stream.aclose()  # type: ignore[attr-defined]
        return leg.outcome(request.agent_id)


async def _cancel_remote(client: Client, task_id: str) -> None:
    """CancelTask, if the remote task exists; one that ended meanwhile is left as it is."""
    if task_id:
        with contextlib.suppress(A2AError, httpx.HTTPError):
            await client.cancel_task(pb.CancelTaskRequest(id=task_id))


def _unreachable(exc: Exception) -> bool:
    """Whether ``exc`` says the remote could not be reached (worth retrying)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError)):
            return True
        cause = cause.__cause__ or cause.__context__
    return False
