"""Runs in flight: started as tasks, buffered for every listener, resumable by seq.

A run does not belong to the HTTP connection that started it: it runs as a
task feeding a buffer, so a client that drops and reconnects (``Last-Event-ID``)
misses nothing. While the run is live, listeners read the buffer; afterwards
the store's event log (``Runtime.read_events``) serves reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from awaken_runtime import (
    AgentEvent,
    CancellationToken,
    Decision,
    InvalidId,
    InvalidInput,
    ResumeRejected,
    ResumeTicket,
    RunFinish,
    Runtime,
    ThreadBusy,
)

from ._problems import Problem

__all__ = ["LiveRun", "RunHub"]

KEEP_FINISHED_S = 120.0
"""How long a finished run's buffer stays in memory for late listeners."""


@dataclass
class LiveRun:
    """One run (or resume leg) in flight and the events it produced so far."""

    run_id: str
    thread_id: str
    key_id: str
    cancel: CancellationToken = field(default_factory=CancellationToken)
    events: list[AgentEvent] = field(default_factory=list)
    done: bool = False
    error: BaseException | None = None
    finished_at: float | None = None
    task: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def push(self, event: AgentEvent) -> None:
        """Append an event and wake the listeners."""
        self.events.append(event)
        self._wake()

    def finish(self, error: BaseException | None) -> None:
        """Mark the run done (``error``: what the run raised, if anything)."""
        self.done, self.error, self.finished_at = True, error, time.monotonic()
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, after: int) -> AsyncIterator[AgentEvent]:
        """Events after the root event with seq ``after``, live until the run ends."""
        index = _position_after(self.events, self.run_id, after)
        while True:
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.done:
                return
            await self._changed.wait()


def _position_after(events: Sequence[AgentEvent], run_id: str, after: int) -> int:
    if after <= 0:
        return 0
    for i, event in enumerate(events):
        if event.run_id == run_id and event.seq == after:
            return i + 1
    for i, event in enumerate(events):
        if event.run_id == run_id and event.seq > after:
            return i
    return len(events)


def _busy(exc: BaseException) -> Problem:
    return Problem(
        409,
        "thread-busy",
        str(exc),
        field="path:thread_id",
        fix="wait for the thread's run to end, resume its tickets, or cancel it",
    )


class RunHub:
    """Starts runs and resume legs as tasks, caps them per key, and serves their events."""

    def __init__(self, *, max_runs_per_key: int = 8) -> None:
        self.max_runs_per_key = max_runs_per_key
        self._live: dict[str, LiveRun] = {}
        self._closing = False

    def live(self, run_id: str) -> LiveRun | None:
        """The buffered run, if it is in flight or finished recently."""
        self._forget_old()
        return self._live.get(run_id)

    def active_for(self, key_id: str) -> int:
        """Runs of one key still in flight."""
        return sum(1 for r in self._live.values() if r.key_id == key_id and not r.done)

    def _forget_old(self) -> None:
        now = time.monotonic()
        for run_id, run in list(self._live.items()):
            if run.finished_at is not None and now - run.finished_at > KEEP_FINISHED_S:
                del self._live[run_id]

    def _admit(self, key_id: str) -> None:
        self._forget_old()
        if self._closing:
            raise Problem(
                503, "shutting-down", "the server is shutting down", fix="retry on another server"
            )
        if self.active_for(key_id) >= self.max_runs_per_key:
            raise Problem(
                429,
                "too-many-runs",
                f"this key already has {self.max_runs_per_key} runs in flight",
                fix="wait for a run to finish (or cancel one), then retry",
                headers={"Retry-After": "1"},
            )

    def _spawn(
        self,
        run: LiveRun,
        events: AsyncIterator[AgentEvent],
        started: asyncio.Event | None = None,
    ) -> None:
        """Feed ``events`` into ``run``'s buffer as a task (``started``: set at the first
        event or the end); what the source raises goes to the run's listeners."""

        async def drive() -> None:
            error: BaseException | None = None
            try:
                async for event in events:
                    run.push(event)
                    if started is not None:
                        started.set()
            except Exception as exc:  # the run's failure goes to its listeners
                error = exc
            finally:
                run.finish(error)
                if started is not None:
                    started.set()

        self._live[run.run_id] = run
        run.task = asyncio.create_task(drive(), name=f"awaken-run-{run.run_id}")

    async def _launch(
        self, run: LiveRun, source: Callable[[CancellationToken], AsyncIterator[AgentEvent]]
    ) -> LiveRun:
        started = asyncio.Event()
        self._spawn(run, source(run.cancel), started)
        await started.wait()
        if not run.events and run.error is not None:
            del self._live[run.run_id]
            if isinstance(run.error, ThreadBusy):
                raise _busy(run.error)
            if isinstance(run.error, (InvalidInput, InvalidId)):
                # Refused before anything was stored: the request's fault, named.
                raise Problem(
                    422, "invalid-input", str(run.error), field="body", fix="fix the run's input"
                )
            if isinstance(run.error, ResumeRejected):
                raise Problem(
                    409, "resume-rejected", str(run.error), fix="read the run's pending tickets"
                )
            raise run.error
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
        """Start a run; returns once it produced its first event (or raise 409/429)."""
        self._admit(key_id)
        if (existing := self._live.get(run_id)) is not None and not existing.done:
            raise _busy(ThreadBusy(f"run {run_id!r} is already in flight"))

        def source(cancel: CancellationToken) -> AsyncIterator[AgentEvent]:
            return runtime.stream(
                agent_id,
                messages,
                thread_id=thread_id,
                run_id=run_id,
                profile_id=profile_id,
                cancel=cancel,
            )

        return await self._launch(LiveRun(run_id, thread_id, key_id), source)

    async def resume(
        self,
        runtime: Runtime,
        *,
        decisions: Sequence[tuple[ResumeTicket, Decision]],
        run_id: str,
        thread_id: str,
        key_id: str,
    ) -> LiveRun:
        """Answer tickets one leg at a time (each leg logs its events), as one stream."""
        self._admit(key_id)

        async def source(cancel: CancellationToken) -> AsyncIterator[AgentEvent]:
            for ticket, decision in decisions:
                async for event in runtime.stream_resume(ticket, decision, cancel=cancel):
                    yield event

        return await self._launch(LiveRun(run_id, thread_id, key_id), source)

    async def events(self, runtime: Runtime, run_id: str, after: int) -> AsyncIterator[AgentEvent]:
        """The run's events after seq ``after``: live if buffered, else from the store."""
        run = self.live(run_id)
        if run is not None:
            first = next((e.seq for e in run.events if e.run_id == run_id), None)
            if first is not None and after < first - 1:
                # A resume leg is buffered; its earlier legs are in the store's log.
                for event in await runtime.read_events(run_id, after=after):
                    if event.seq < first:
                        yield event
                after = first - 1
            async for event in run.follow(after):
                yield event
            return
        for event in await runtime.read_events(run_id, after=after):
            yield event

    def cancel(self, run_id: str) -> bool:
        """Ask a live run to stop at its next boundary; ``False`` if it is not live."""
        run = self._live.get(run_id)
        if run is None or run.done:
            return False
        run.cancel.cancel("cancelled through the API")
        return True

    async def request_cancel(self, run_id: str) -> bool:
        """:meth:`cancel`, as the service calls it (the ingress hub's is a queued job)."""
        return self.cancel(run_id)

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Refuse new runs, cancel live ones and wait for them to checkpoint."""
        self._closing = True
        tasks = []
        for run in self._live.values():
            if not run.done and run.task is not None:
                run.cancel.cancel("server shutting down")
                tasks.append(run.task)
        if tasks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout)


def is_final(event: AgentEvent, root_run_id: str) -> bool:
    """Whether ``event`` ends a leg of the root run."""
    return isinstance(event, RunFinish) and event.run_id == root_run_id
