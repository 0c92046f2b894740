"""What every endpoint shares: the runtime, the owners, the hub, and their checks."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from awaken_runtime import (
    AgentConfig,
    Decision,
    Message,
    ResumeTicket,
    Runtime,
    Scope,
    ScopeBinding,
    ThreadSnapshot,
)
from awaken_runtime.stores import FullStore

from ._agents import AgentCatalog
from ._chat_streams import ChatStreams, OnDisconnect
from ._history import HistoryPolicy
from ._hub import LiveRun, RunHub
from ._ids import new_id
from ._keys import Principal
from ._owners import Owners
from ._problems import Problem

__all__ = ["Service", "external_thread_id"]


def external_thread_id(profile_id: str, client_id: str) -> str:
    """The thread of a client-chosen id (AI SDK chat id, AG-UI threadId) for one profile.

    Client ids are namespaced per profile, so guessing another profile's chat id
    reaches a different (new) thread and says nothing about theirs.
    """
    digest = hashlib.sha256(f"{profile_id}\0{client_id}".encode()).hexdigest()[:24]
    return f"ext_{digest}"


@dataclass
class Service:
    """The server's shared state."""

    store: FullStore
    catalog: AgentCatalog
    owners: Owners
    hub: RunHub
    runtime: Runtime
    on_disconnect: OnDisconnect = "cancel"
    """What a dropped AI SDK or AG-UI stream does to its run (``--on-disconnect``)."""
    chat_streams: ChatStreams = field(default_factory=ChatStreams)
    history: HistoryPolicy = "server"
    """Whose list of messages a chat runs on (``--history``)."""
    _publish_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _background: set[asyncio.Task[Any]] = field(default_factory=set)

    def dropped(self, run: LiveRun) -> None:
        """A front-end stream of ``run`` ended before its last chunk: under ``cancel``, the
        run stops at its next boundary (the thread keeps what was committed, no more)."""
        if self.on_disconnect != "cancel" or run.done:
            return
        # Called from a stream being torn down: the cancel (a queued job in ingress
        # mode) runs as its own task so the teardown never waits on it.
        task = asyncio.get_running_loop().create_task(self.hub.request_cancel(run.run_id))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def agent(self, agent_id: str) -> None:
        """404 unless the server offers ``agent_id``."""
        if self.catalog.config(agent_id) is None:
            raise Problem(
                404,
                "not-found",
                f"agent {agent_id!r} does not exist",
                field="agent_id",
                fix="GET /v1/agents lists the agents",
            )

    async def publish(self, config: dict[str, Any], note: str) -> Any:
        """Publish a config version (only if it resolves) and rebuild the runtime with it."""
        async with self._publish_lock:
            runtime = self._trial(config)
            version = await self.store.publish_config(config, note=note)
            return await self._use(version, runtime)

    async def rollback(self, agent_id: str, version: int) -> Any:
        """Publish a copy of an older version."""
        async with self._publish_lock:
            old = await self.store.get_config(agent_id, version)
            runtime = self._trial(old.config)
            return await self._use(await self.store.rollback_config(agent_id, version), runtime)

    def _trial(self, config: dict[str, Any]) -> Runtime:
        """The runtime with ``config`` in place; raises ``AwakenError`` if it does not resolve."""
        parsed = AgentConfig.from_dict(config, source="the published config")
        trial = replace(self.catalog, configs={**self.catalog.configs, parsed.id: parsed})
        return trial.build(self.store)

    async def _use(self, version: Any, runtime: Runtime) -> Any:
        self.catalog.use(version.agent_id, version.version, version.config)
        self.runtime = runtime
        await self.owners.add_published(version.agent_id)
        return version

    async def snapshot(self, thread_id: str, profile_id: str) -> ThreadSnapshot:
        """The committed thread (its owner checked by the caller)."""
        snap: ThreadSnapshot = await self.store.load(ScopeBinding(thread_id, profile_id, "default"))
        return snap

    async def ensure_thread(self, thread_id: str, principal: Principal, agent_id: str) -> None:
        """Create the thread for ``principal`` unless it exists (404 if it is another's)."""
        if await self.owners.has_thread(thread_id):
            await self.owners.thread(thread_id, principal.profile_id)
            return
        await self.owners.add_thread(thread_id, principal.profile_id, agent_id)

    async def owns_thread(self, thread_id: str, principal: Principal) -> bool:
        """Whether ``thread_id`` exists and is ``principal``'s."""
        if not await self.owners.has_thread(thread_id):
            return False
        try:
            await self.owners.thread(thread_id, principal.profile_id)
        except Problem:
            return False
        return True

    async def start_run(
        self,
        principal: Principal,
        *,
        agent_id: str,
        thread_id: str,
        messages: list[Message],
        run_id: str | None = None,
    ) -> LiveRun:
        """Start a run on a thread of ``principal`` (checked) and record it."""
        self.agent(agent_id)
        await self.owners.thread(thread_id, principal.profile_id)
        run_id = run_id or new_id("run_")
        await self.owners.add_run(
            run_id,
            {
                "thread_id": thread_id,
                "profile_id": principal.profile_id,
                "agent_id": agent_id,
                "config_version": self.catalog.version_of(agent_id),
                "started_at": datetime.now(UTC).isoformat(),
            },
        )
        return await self.hub.start(
            self.runtime,
            agent_id=agent_id,
            messages=messages,
            thread_id=thread_id,
            run_id=run_id,
            profile_id=principal.profile_id,
            key_id=principal.key_id,
        )

    async def chat_thread(self, chat_key: str) -> str:
        """The chat's current thread (its latest revision)."""
        record = await self.owners.chat(chat_key)
        thread_id: str = record["thread_id"]
        return thread_id

    async def fork(
        self, principal: Principal, chat_key: str, agent_id: str, messages: list[Message]
    ) -> LiveRun:
        """Run on a new revision of a chat: a new thread whose first run takes ``messages``.

        The revision becomes the chat's current thread once its run has started (a
        refused run leaves the chat as it was); the old thread stays, listed in the
        chat's revisions, so nothing it held is destroyed.
        """
        self.agent(agent_id)
        thread_id = new_id("thread_")
        await self.owners.add_thread(thread_id, principal.profile_id, agent_id, chat_key=chat_key)
        run = await self.start_run(
            principal, agent_id=agent_id, thread_id=thread_id, messages=messages
        )
        await self.owners.move_chat(chat_key, thread_id)
        return run

    async def pending(self, thread_id: str, profile_id: str) -> list[ResumeTicket]:
        """The thread's tickets waiting for a decision."""
        snap = await self.snapshot(thread_id, profile_id)
        return list(snap.parked.tickets) if snap.parked is not None else []

    async def resume(
        self, principal: Principal, run_id: str, answers: list[tuple[str, Decision]]
    ) -> LiveRun:
        """Answer tickets (by id) of a waiting run of ``principal``."""
        record = await self.owners.run(run_id, principal.profile_id)
        thread_id = record["thread_id"]
        tickets = {t.ticket_id: t for t in await self.pending(thread_id, principal.profile_id)}
        pairs: list[tuple[ResumeTicket, Decision]] = []
        for n, (ticket_id, decision) in enumerate(answers):
            ticket = tickets.get(ticket_id)
            if ticket is None or ticket.run_id != run_id:
                raise Problem(
                    409,
                    "ticket-not-pending",
                    f"ticket {ticket_id!r} is not pending on run {run_id!r}",
                    field=f"/decisions/{n}/ticket_id",
                    fix="GET /v1/runs/{run_id} lists the pending tickets",
                )
            if "by" in type(decision).model_fields:
                # Audit trails name the caller's profile, never what the body claims.
                decision = decision.model_copy(update={"by": f"profile:{principal.profile_id}"})
            pairs.append((ticket, decision))
        return await self.hub.resume(
            self.runtime,
            decisions=pairs,
            run_id=run_id,
            thread_id=thread_id,
            key_id=principal.key_id,
        )

    async def cancel(self, principal: Principal, run_id: str) -> str:
        """Cancel a live or waiting run of ``principal``; what happened, as a word."""
        record = await self.owners.run(run_id, principal.profile_id)
        if await self.hub.request_cancel(run_id):
            return "cancelling"
        snap = await self.snapshot(record["thread_id"], principal.profile_id)
        if snap.parked is not None and snap.parked.run_id == run_id:
            await self.runtime.cancel_waiting(record["thread_id"])
            return "cancelled"
        raise Problem(
            409,
            "run-not-active",
            f"run {run_id!r} is neither running nor waiting",
            field="path:run_id",
            fix="only a running or waiting run can be cancelled",
        )

    def thread_state(self, snap: ThreadSnapshot) -> dict[str, Any]:
        """The thread-scope state of a snapshot as a JSON object."""
        return {
            str(key): value for (scope, key), value in snap.state.items() if scope is Scope.THREAD
        }

    async def check_run(self, run_id: str, principal: Principal) -> dict[str, Any]:
        """The record of a run of ``principal`` (404 otherwise)."""
        return await self.owners.run(run_id, principal.profile_id)

    async def check_thread(self, thread_id: str, principal: Principal) -> dict[str, Any]:
        """The record of a thread of ``principal`` (404 otherwise)."""
        return await self.owners.thread(thread_id, principal.profile_id)
