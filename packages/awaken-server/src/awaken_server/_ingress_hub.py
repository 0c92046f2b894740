"""Runs on workers: ``awaken serve --ingress`` submits to the run ingress and follows logs.

The web tier and the workers scale apart: a run request becomes a job on the
PostgreSQL queue (``awaken_run_ingress.RunIngress``), an ``awaken worker``
somewhere runs it and writes its events to the shared store's event log, and
this process streams them to the client by tailing that log
(``tail_events``, LISTEN/NOTIFY). Decisions and cancels are jobs too. Events
arrive a step at a time (the worker logs at each ``StepEnd``), not token by
token. The run's buffer here is only a follower: shutting the server down
stops following, never the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from awaken_runtime import (
    AgentEvent,
    Decision,
    Phase,
    ResumeTicket,
    RunFinish,
    Runtime,
    ScopeBinding,
    ThreadBusy,
    event_adapter,
)
from awaken_runtime.stores import FullStore, StreamEvent

from ._hub import LiveRun, RunHub, _busy, is_final

if TYPE_CHECKING:
    from awaken_run_ingress import RunIngress

__all__ = ["IngressHub", "TailableStore", "check_tailable"]


class TailableStore(FullStore, Protocol):
    """A full store whose event logs can be followed live across processes (PostgreSQL's)."""

    def tail_events(
        self, run_id: str, after: int = 0, *, until_finish: bool = True, idle: float = 5.0
    ) -> AsyncIterator[StreamEvent]:
        """Events of ``run_id`` with seq > ``after`` as other processes log them."""
        ...


def check_tailable(store: FullStore) -> TailableStore:
    """``store`` as a :class:`TailableStore`; ``TypeError`` unless it can follow event logs
    written by other processes."""
    if not callable(getattr(store, "tail_events", None)):
        raise TypeError(
            f"--ingress needs a store whose event log other processes can follow "
            f"(tail_events); {type(store).__name__} cannot: use the workers' PostgreSQL "
            f"store (--store postgresql://...)"
        )
    return cast("TailableStore", store)


class IngressHub(RunHub):
    """A :class:`RunHub` whose runs are jobs for ``awaken worker`` processes."""

    def __init__(self, ingress: RunIngress, store: FullStore, *, max_runs_per_key: int = 8) -> None:
        super().__init__(max_runs_per_key=max_runs_per_key)
        self.ingress, self.store = ingress, check_tailable(store)

    async def _tail(self, run_id: str, after: int, legs: int = 1) -> AsyncIterator[AgentEvent]:
        """Logged events of ``run_id`` after ``after`` until ``legs`` of its legs finished
        (or it ended); live, across processes."""
        async for stored in self.store.tail_events(run_id, after, until_finish=False):
            event: AgentEvent = event_adapter.validate_python(stored.data)
            yield event
            if is_final(event, run_id):
                legs -= 1
                if legs <= 0 or event.phase is Phase.ENDED:  # type: ignore[union-attr]
                    return

    async def _follow(self, run: LiveRun, events: AsyncIterator[AgentEvent]) -> LiveRun:
        self._spawn(run, events)  # no wait for a first event: a queued run may wait long
        return run

    async def start(
        self,
        runtime: Runtime,
        *,
        agent_id: str,
        messages: Any,
        thread_id: str,
        run_id: str,
        profile_id: str,
        key_id: str,
    ) -> LiveRun:
        """Queue the run (its id is the job's dedupe key) and follow its log."""
        self._admit(key_id)
        snap = await self.store.load(ScopeBinding(thread_id, profile_id, "default"))
        if snap.parked is not None:  # a worker would only retry it until it is decided
            raise _busy(
                ThreadBusy(
                    f"thread {thread_id!r} has run {snap.parked.run_id!r} waiting for "
                    f"{len(snap.parked.tickets)} decision(s); resume or cancel it first"
                )
            )
        await self.ingress.submit(
            agent_id, list(messages), thread_id=thread_id, run_id=run_id, profile_id=profile_id
        )
        return await self._follow(LiveRun(run_id, thread_id, key_id), self._tail(run_id, 0))

    async def resume(
        self,
        runtime: Runtime,
        *,
        decisions: Sequence[tuple[ResumeTicket, Decision]],
        run_id: str,
        thread_id: str,
        key_id: str,
    ) -> LiveRun:
        """Queue one decision job per ticket and follow the legs they resume."""
        self._admit(key_id)
        snap = await self.store.load(ScopeBinding(thread_id, "default", "default"))
        after = snap.parked.seq if snap.parked is not None else 0
        for ticket, decision in decisions:
            await self.ingress.decide(ticket, decision)
        legs = len(decisions)
        return await self._follow(
            LiveRun(run_id, thread_id, key_id), self._tail(run_id, after, legs)
        )

    async def events(self, runtime: Runtime, run_id: str, after: int) -> AsyncIterator[AgentEvent]:
        """The run's events after seq ``after``: what is logged, then live until it stops."""
        if self.live(run_id) is not None:
            async for event in super().events(runtime, run_id, after):
                yield event
            return
        last: AgentEvent | None = None
        for last in await runtime.read_events(run_id, after=after):
            yield last
        if last is not None and isinstance(last, RunFinish) and last.run_id == run_id:
            return  # it ended, or waits for a decision
        record = await self.store.get_run(run_id)
        if record is not None and record.phase is not Phase.RUNNING:
            return
        async for event in self._tail(run_id, last.seq if last is not None else after):
            yield event

    async def request_cancel(self, run_id: str) -> bool:
        """Queue the cancel of a queued, running or waiting run (it reaches the worker
        running it); ``False`` if the run ended."""
        record = await self.store.get_run(run_id)
        if record is not None and record.phase is Phase.ENDED:
            return False
        await self.ingress.cancel(run_id)
        return True

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Stop following; the runs go on on their workers."""
        self._closing = True
        tasks = [r.task for r in self._live.values() if r.task is not None and not r.done]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
