"""``Runtime``: resolve agents, run them, and resume runs that wait for decisions."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from .._errors import AgentConfigError, check_id
from ..agents._resolve import ExecutableAgentSnapshot, Registries, ResolvedAgent, resolve_agent
from ..delegation._service import ChildRunner, NativeDelegationService, RunDelegationService
from ..messages._message import Message, new_id
from ..run._deps import RunDeps
from ..run._loop import AgentLoop
from ..stores._lease import LeaseGuard, guard_lease
from ..stores._thread_store import ScopeBinding, ThreadStore
from ..stores.memory import InMemoryStore
from ..suspension._suspension import ResumeRejected, ResumeTicket, ThreadBusy
from ..tools._cancel import CancellationToken
from ._catalogs import Catalogs
from ._input import input_messages
from ._recovery import carry_on, recover, stranded, sweep

# What only resuming, streaming, delegating or warming up needs is imported where
# it is used: a plain run loads none of it (tests/runtime/test_working_import.py).
if TYPE_CHECKING:
    from ..delegation._delegation import DelegationRequest
    from ..lifecycle._events import AgentEvent
    from ..lifecycle._observer import RunObserver
    from ..lifecycle._run_state import RunState
    from ..plugins._actions import ScheduledAction
    from ..plugins._discovery import Discovery
    from ..stores._ports import Retention
    from ..stores._records import PruneReport
    from ..suspension._decisions import Decision
    from ._streaming import EventSink
    from ._tickets import TicketLike

__all__ = ["OnAwait", "RunInput", "Runtime"]

RunInput = str | Message | Sequence[Message]
"""A run's input: a user text, one message, or several messages."""

OnAwait = Callable[[ResumeTicket], "Decision | Awaitable[Decision | None] | None"]
"""Answers one ticket for :meth:`Runtime.run_to_completion`; ``None`` leaves it waiting."""


class Runtime:
    """Resolves agents against fixed registries and runs them over threads.

    Build one with ``AgentRuntimeBuilder``. Resolution is cached per agent id
    (the registries never change after ``build``), so a run pays only for the
    loop. A run that parks tool calls returns a ``WAITING`` state with one
    ticket per call; :meth:`resume` continues it, in this process or any other
    that shares the store.
    """

    def __init__(
        self,
        registries: Registries,
        *,
        store: ThreadStore | None = None,
        discovery: Discovery | None = None,
        ticket_secret: bytes | None = None,
        delegation: RunDelegationService | None = None,
        observer: RunObserver | None = None,
    ) -> None:
        self.registries = registries
        self.observer = observer  # told of every leg, inference and tool call (tracing)
        self.store: ThreadStore = store if store is not None else InMemoryStore()
        self.discovery = discovery
        self.ticket_secret = ticket_secret
        self.progress_records = False
        """Write each step's run record, so ``continue_run`` can pick a dead run up."""
        self._resolved: dict[str, ResolvedAgent] = {}
        self._catalogs = Catalogs(registries, self)
        # Weak: a lock lives while a run holds it, so many threads do not pile up.
        self._thread_locks = weakref.WeakValueDictionary[str, asyncio.Lock]()
        self.delegation: RunDelegationService = (
            delegation if delegation is not None else NativeDelegationService(self)
        )

    # -- resolution --------------------------------------------------------------

    def resolve(self, agent_id: str) -> ExecutableAgentSnapshot:
        """The snapshot of ``agent_id`` (raises on unknown ids or bad config); the tools of
        ``ToolCatalog`` plugins are those last listed (:meth:`aresolve` lists them anew)."""
        return self._agent(agent_id).snapshot

    async def aresolve(self, agent_id: str) -> ExecutableAgentSnapshot:
        """Like :meth:`resolve`, after listing the agent's catalog tools anew."""
        await self._refresh(agent_id)
        return self._agent(agent_id).snapshot

    async def _refresh(self, agent_id: str) -> None:
        if await self._catalogs.refresh(agent_id):
            self._resolved.pop(agent_id, None)

    async def aclose(self) -> None:
        """Release what plugins hold for this runtime (catalog connections); idempotent."""
        await self._catalogs.aclose()

    def _agent(self, agent: str | ExecutableAgentSnapshot) -> ResolvedAgent:
        if isinstance(agent, ExecutableAgentSnapshot):
            resolved = self._agent(agent.config.id)
            if resolved.snapshot.fingerprint != agent.fingerprint:
                raise AgentConfigError(
                    f"snapshot of agent {agent.config.id!r} has fingerprint "
                    f"{agent.fingerprint[:12]}…, but the registries now resolve it to "
                    f"{resolved.snapshot.fingerprint[:12]}…; resolve the agent again"
                )
            return resolved
        found = self._resolved.get(agent)
        if found is None:
            found = resolve_agent(
                self.registries, agent, self.delegation.tool_id(), self._catalogs.listed(agent)
            )
            self._resolved[agent] = found
        return found

    def _new_loop(
        self,
        resolved: ResolvedAgent,
        binding: ScopeBinding,
        run_id: str,
        cancel: CancellationToken | None,
        emit: EventSink | None,
        lease: LeaseGuard | None,
    ) -> AgentLoop:
        deps = RunDeps(resolved, self.store, binding, run_id, emit=emit)
        deps.lease, deps.progress = lease, self.progress_records
        deps.ticket_secret = self.ticket_secret
        deps.observer = self.observer
        deps.cancel_child = self._cancel_child
        deps.delegation_tool_id = self.delegation.tool_id()
        if self.delegation.supports_parallel():
            deps.parallel_limit = max(1, int(getattr(self.delegation, "max_parallel", 4)))
        if resolved.dynamic_tools:
            deps.add_dynamic_tools(resolved.dynamic_tools)
        loop = AgentLoop(deps, cancel=cancel)
        deps.children = ChildRunner(self.delegation, deps, loop.leg)
        return loop

    def _lock(self, thread_id: str) -> asyncio.Lock:
        return self._thread_locks.setdefault(thread_id, asyncio.Lock())

    # -- running -----------------------------------------------------------------

    async def run(
        self,
        agent: str | ExecutableAgentSnapshot,
        input: RunInput,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        profile_id: str = "default",
        namespace: str = "default",
        cancel: CancellationToken | None = None,
        on_event: EventSink | None = None,
        actions: Sequence[ScheduledAction] = (),
    ) -> RunState:
        """Run ``agent`` on ``input`` in ``thread_id`` (a new thread if omitted).

        ``profile_id`` binds PROFILE-scope state, ``namespace`` SHARED-scope
        state. ``on_event`` receives every ``AgentEvent`` as it happens.
        ``actions``: scheduled actions an ended run left pending (its
        ``pending_actions``), run once due: how a time-based action wakes a thread.
        Raises ``ThreadBusy`` if the thread has a run waiting for decisions, or
        an active run elsewhere (the store's per-thread lease).
        """
        if thread_id is not None:
            check_id("thread id", thread_id)
        if run_id is not None:
            check_id("run id", run_id)
        check_id("profile id", profile_id)
        check_id("namespace", namespace)
        messages = input_messages(input)
        await self._refresh(agent if isinstance(agent, str) else agent.config.id)
        resolved = self._agent(agent)
        binding = ScopeBinding(thread_id or new_id("thread_"), profile_id, namespace)
        async with (
            self._lock(binding.thread_id),
            guard_lease(self.store, binding.thread_id) as lease,
        ):
            snapshot = await self.store.load(binding)
            if lease is not None and stranded(snapshot):
                snapshot = await recover(self, binding, snapshot, lease, run_id)
            if snapshot.parked is not None:
                raise ThreadBusy(
                    f"thread {binding.thread_id!r} has run {snapshot.parked.run_id!r} waiting "
                    f"for {len(snapshot.parked.tickets)} decision(s); resume or cancel it first"
                )
            loop = self._new_loop(
                resolved, binding, run_id or new_id("run_"), cancel, on_event, lease
            )
            return await loop.run(snapshot, messages, actions)

    async def stream(
        self, agent: str | ExecutableAgentSnapshot, input: RunInput, **kwargs: Any
    ) -> AsyncIterator[AgentEvent]:
        """Run like :meth:`run` and yield its events; the last one is ``RunFinish``."""
        from ._streaming import stream_run

        async for event in stream_run(
            lambda sink: self.run(agent, input, on_event=sink, **kwargs), self.store
        ):
            yield event

    def run_sync(
        self, agent: str | ExecutableAgentSnapshot, input: RunInput, **kwargs: Any
    ) -> RunState:
        """Blocking :meth:`run` for scripts and notebooks without a running event loop."""
        return asyncio.run(self.run(agent, input, **kwargs))

    # -- resuming ----------------------------------------------------------------

    async def resume(
        self,
        ticket: TicketLike,
        decision: Decision,
        *,
        cancel: CancellationToken | None = None,
        on_event: EventSink | None = None,
    ) -> RunState:
        """Answer one ticket; see :meth:`resume_many`."""
        return await self.resume_many([(ticket, decision)], cancel=cancel, on_event=on_event)

    async def resume_many(
        self,
        decisions: Sequence[tuple[TicketLike, Decision]],
        *,
        cancel: CancellationToken | None = None,
        on_event: EventSink | None = None,
    ) -> RunState:
        """Apply decisions to parked calls of one waiting run, then continue it.

        Every ticket must match its stored copy field for field, be pending,
        unexpired and due, and the agent must still resolve to the fingerprint
        it parked with; otherwise ``ResumeRejected`` is raised and nothing
        changes. The run stays ``WAITING`` while other tickets remain.
        """
        return await self._resume(decisions, cancel=cancel, on_event=on_event)

    async def _resume(
        self,
        decisions: Sequence[tuple[TicketLike, Decision]],
        *,
        cancel: CancellationToken | None,
        on_event: EventSink | None,
        parent: DelegationRequest | None = None,
    ) -> RunState:
        from ..run._resume import Resumer
        from ._tickets import check_resume, load_parked, parse_decision, parse_ticket

        if not decisions:
            raise ResumeRejected("no decisions given")
        pairs = [(parse_ticket(t), parse_decision(d)) for t, d in decisions]
        if self.ticket_secret is not None:
            for ticket, _ in pairs:
                if not ticket.verify(self.ticket_secret):
                    raise ResumeRejected(
                        f"ticket {ticket.ticket_id!r} has no valid signature (tampered, or "
                        f"signed under another secret)"
                    )
        thread_ids = {t.thread_id for t, _ in pairs}
        if len(thread_ids) != 1:
            raise ResumeRejected("all tickets of one resume must belong to the same thread")
        thread_id = thread_ids.pop()
        async with self._lock(thread_id), guard_lease(self.store, thread_id) as lease:
            # Check and claim against one load: the claim commits at its version.
            snapshot, parked = await load_parked(self.store, thread_id)
            await self._refresh(parked.agent_id)
            resolved = check_resume(self._agent, thread_id, parked, [t for t, _ in pairs])
            if parent is not None and parent.inherited is not None:
                resolved = resolved.with_inherited(parent.inherited)
            binding = ScopeBinding(thread_id, parked.profile_id, parked.namespace)
            loop = self._new_loop(resolved, binding, parked.run_id, cancel, on_event, lease)
            if parent is not None:
                loop.deps.parent_run_id, loop.deps.lineage = parent.parent_run_id, parent.lineage
                loop.leg.tree = parent.tree
            legs = Resumer(loop)
            legs.restore(snapshot, parked)
            stored = {t.ticket_id: t for t in parked.tickets}
            await legs.claim(parked, [t.ticket_id for t, _ in pairs])
            return await legs.resume(parked, [(stored[t.ticket_id], d) for t, d in pairs])

    # -- sub-agents --------------------------------------------------------------

    async def run_child(self, request: DelegationRequest, text: str) -> RunState:
        """Run a sub-agent for a parent run (used by the native delegation service)."""
        await self._refresh(request.agent_id)
        resolved = self._agent(request.agent_id)
        if request.inherited is not None:
            resolved = resolved.with_inherited(request.inherited)
        binding = ScopeBinding(request.thread_id, request.profile_id, request.namespace)
        async with (
            self._lock(binding.thread_id),
            guard_lease(self.store, binding.thread_id) as lease,
        ):
            snapshot = await self.store.load(binding)
            if snapshot.parked is not None:
                raise ThreadBusy(f"child thread {binding.thread_id!r} has a waiting run")
            loop = self._new_loop(
                resolved, binding, new_id("run_"), request.cancel, request.on_event, lease
            )
            loop.deps.parent_run_id, loop.deps.lineage = request.parent_run_id, request.lineage
            loop.leg.tree = request.tree
            return await loop.run(snapshot, [Message.user(text)])

    async def resume_child(
        self, request: DelegationRequest, ticket: ResumeTicket, decision: Decision
    ) -> RunState:
        """Resume a waiting sub-agent with a decision made on its parent's ticket."""
        return await self._resume(
            [(ticket, decision)], cancel=request.cancel, on_event=request.on_event, parent=request
        )

    async def _cancel_child(self, payload: dict[str, Any]) -> None:
        # ResumeRejected: the child is not waiting (it finished or was cancelled already).
        from ..delegation._routed import cancel_child

        with contextlib.suppress(ResumeRejected):
            await cancel_child(self.delegation, payload, self.cancel_waiting)

    async def cancel_waiting(
        self, thread_id: str, *, on_event: EventSink | None = None
    ) -> RunState:
        """End the thread's waiting run as ``Cancelled``; its parked calls get error results."""
        from ..run._resume import Resumer
        from ._tickets import load_parked

        async with self._lock(thread_id), guard_lease(self.store, thread_id) as lease:
            snapshot, parked = await load_parked(self.store, thread_id)
            resolved = self._agent(parked.agent_id)
            binding = ScopeBinding(thread_id, parked.profile_id, parked.namespace)
            loop = self._new_loop(resolved, binding, parked.run_id, None, on_event, lease)
            legs = Resumer(loop)
            legs.restore(snapshot, parked)
            return await legs.cancel_parked(parked)

    async def continue_run(
        self,
        thread_id: str,
        *,
        profile_id: str = "default",
        namespace: str = "default",
        cancel: CancellationToken | None = None,
        on_event: EventSink | None = None,
    ) -> RunState | None:
        """Continue the run a dead process left RUNNING, from its last committed step
        (``None`` if there is none); see ``_recovery.carry_on``."""
        binding = ScopeBinding(thread_id, profile_id, namespace)
        return await carry_on(self, binding, cancel, on_event)

    async def recover_abandoned(self, thread_ids: Iterable[str] | None = None) -> list[str]:
        """End the runs dead processes left on ``thread_ids`` (default: all); see ``sweep``."""
        return await sweep(self, thread_ids)

    async def warm_up(self, *agent_ids: str) -> None:
        """Let providers with a ``warm_up`` load themselves (off the event loop) now: those
        of ``agent_ids`` (their models' providers), or every registered one."""
        from ._warm import warm_up

        providers = [self._agent(a).executor for a in agent_ids] or self.registries.providers
        await warm_up(providers.values() if isinstance(providers, dict) else providers)

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """:meth:`recover_abandoned`, then the store's ``prune`` (which keeps live runs)."""
        await sweep(self)
        return await cast("Retention", self.store).prune(older_than)

    async def run_to_completion(
        self,
        agent: str | ExecutableAgentSnapshot,
        input: RunInput,
        *,
        on_await: OnAwait,
        on_event: EventSink | None = None,
        **kwargs: Any,
    ) -> RunState:
        """Run, answering every ticket inline with ``on_await`` until the run ends.

        Scheduled calls are resumed when due (this coroutine sleeps until then).
        If ``on_await`` returns ``None`` the run is returned still waiting.
        """
        from ._completion import drive

        return await drive(self, agent, input, on_await, on_event, **kwargs)

    async def stream_resume(
        self, ticket: TicketLike, decision: Decision, **kwargs: Any
    ) -> AsyncIterator[AgentEvent]:
        """Resume like :meth:`resume` and yield the leg's events (RunStart ... RunFinish)."""
        from ._streaming import stream_run

        async for event in stream_run(
            lambda sink: self.resume(ticket, decision, on_event=sink, **kwargs), self.store
        ):
            yield event

    async def read_events(self, run_id: str, after: int = 0) -> list[AgentEvent]:
        """Logged events of ``run_id`` with ``seq > after`` (for a client that reconnects).

        Events of streamed runs are logged at every step boundary by stores
        with an event log (all built-in ones); other stores return nothing.
        """
        from ._event_log import read_events

        return await read_events(self.store, run_id, after)
