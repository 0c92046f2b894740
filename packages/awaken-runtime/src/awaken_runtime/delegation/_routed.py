"""Remote delegates beside native ones: one ``agent_run``, routed by agent id.

A remote delegate (an A2A peer, from ``awaken-protocol-a2a``) is a
``RunDelegationService`` registered for one agent id
(``AgentRuntimeBuilder.with_remote_delegate``). ``RoutedDelegationService``
sends each request to the remote registered for its agent id, and every other
one to the native service, so native and remote sub-agents are peers chosen by
agent id (SPEC 3.12). A remote that can cancel its waiting child implements
``RemoteChildren``; the runtime calls it when a parked parent is cancelled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..suspension._decisions import Decision
from ..suspension._suspension import ResumeTicket
from ._delegation import ChildOutcome, DelegationRequest
from ._service import AGENT_RUN, RunDelegationService

__all__ = ["RemoteChildren", "RoutedDelegationService", "cancel_child"]


@runtime_checkable
class RemoteChildren(Protocol):
    """A delegation service whose waiting children live elsewhere and can be cancelled."""

    async def cancel_waiting_child(self, payload: dict[str, Any]) -> None:
        """Cancel the child a parent's DELEGATION ticket (``payload``) waits for."""
        ...


class RoutedDelegationService:
    """Routes ``agent_run`` by agent id: registered remotes, else the native service."""

    def __init__(
        self, native: RunDelegationService, remotes: Mapping[str, RunDelegationService]
    ) -> None:
        self.native = native
        self.remotes = dict(remotes)
        # The runtime reads it for parallel delegation batches (see Runtime._new_loop).
        self.max_parallel = int(getattr(native, "max_parallel", 4))

    def tool_id(self) -> str:
        """``agent_run``."""
        return AGENT_RUN

    def supports_parallel(self) -> bool:
        """As the native service: children (local or remote) may run concurrently."""
        return self.native.supports_parallel()

    def _for(self, agent_id: str) -> RunDelegationService:
        return self.remotes.get(agent_id, self.native)

    async def delegate(self, request: DelegationRequest) -> ChildOutcome:
        """Start the child where its agent id lives."""
        return await self._for(request.agent_id).delegate(request)

    async def resume(
        self, request: DelegationRequest, ticket: ResumeTicket, decision: Decision
    ) -> ChildOutcome:
        """Continue the waiting child where its agent id lives."""
        return await self._for(request.agent_id).resume(request, ticket, decision)

    async def cancel_waiting_child(self, payload: dict[str, Any]) -> bool:
        """Cancel a remote waiting child; ``False`` if the child is native."""
        remote = self.remotes.get(str(payload.get("agent_id", "")))
        if remote is None or not isinstance(remote, RemoteChildren):
            return False
        await remote.cancel_waiting_child(payload)
        return True


async def cancel_child(
    service: RunDelegationService,
    payload: dict[str, Any],
    cancel_local: Callable[[str], Awaitable[object]],
) -> None:
    """Cancel the waiting child of a DELEGATION ticket: remotely, or on its local thread."""
    if isinstance(service, RoutedDelegationService) and await service.cancel_waiting_child(payload):
        return
    await cancel_local(payload["child_thread_id"])
