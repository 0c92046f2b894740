"""``Worker``: takes the ingress's jobs and runs them on a runtime.

Delivery is at least once (pgqueuer re-picks a job whose worker stopped
heartbeating); each step is effectively once because the store's version
check and thread lease let only one process commit to a thread, and a run
whose worker died is continued from its last committed step
(``Runtime.continue_run``), never started over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from pgqueuer import Job, Queries, QueueManager, RetryRequested
from pgqueuer.types import QueueExecutionMode

from awaken_runtime import (
    Approve,
    AwaitReason,
    CancellationToken,
    Phase,
    ResumeRejected,
    ResumeTicket,
    RunRecord,
    RunState,
    Runtime,
    ScheduledAction,
    ScopeBinding,
    ThreadBusy,
    finish_event_log,
)

from ._driver import SplitDriver
from ._events import RunEvents
from ._ingress import RunIngress, run_entrypoint
from ._jobs import CANCEL, DECISION, EXPIRE, DecisionJob, RunJob
from ._schema import CANCEL_CHANNEL, connect, install

if TYPE_CHECKING:
    from awaken_runtime import Decision

__all__ = ["Worker"]

log = logging.getLogger("awaken_run_ingress")

_BUSY_ATTEMPTS = 1000
"""Retries of a job whose thread stays busy (a live lease, a waiting run) before it is dropped."""


class Worker:
    """Processes run, decision and cancel jobs with ``runtime`` (built with
    ``AgentRuntimeBuilder.with_progress_records()`` so dead runs can be continued).

    ``concurrency`` caps the jobs this worker runs at once; ``per_agent`` caps
    an agent's runs across every worker (pgqueuer enforces it in SQL).
    ``heartbeat_timeout`` is how long a dead worker's jobs wait before another
    worker takes them; keep the store's ``lease_ttl`` at or below it.
    """

    def __init__(
        self,
        runtime: Runtime,
        dsn: str,
        *,
        schema: str = "awaken_ingress",
        agents: list[str] | None = None,
        concurrency: int = 4,
        per_agent: Mapping[str, int] | None = None,
        heartbeat_timeout: timedelta = timedelta(seconds=10),
        retry_delay: timedelta = timedelta(seconds=0.5),
        poll: timedelta = timedelta(seconds=0.1),
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.runtime = runtime
        self.dsn, self.schema = dsn, schema
        self.agents = list(agents) if agents is not None else sorted(runtime.registries.agents)
        self.concurrency = concurrency
        self.per_agent = dict(per_agent or {})
        self.heartbeat_timeout = heartbeat_timeout
        self.retry_delay = retry_delay
        self.poll = poll
        self.live: dict[str, CancellationToken] = {}
        """Run id -> the token of a run this worker is running now."""
        self._slots = asyncio.Semaphore(concurrency)
        self._qm: QueueManager | None = None
        self._ingress = RunIngress(dsn, schema=schema)

    def stop(self) -> None:
        """Finish the jobs in flight, take no new ones, and return from :meth:`run`."""
        if self._qm is not None:
            self._qm.shutdown.set()

    async def run(self, *, drain: bool = False) -> None:
        """Process jobs until :meth:`stop` (or, with ``drain``, until the queue is empty)."""
        conn = await connect(self.dsn, self.schema)
        listener = await connect(self.dsn, self.schema)
        queue_listener = await connect(self.dsn, self.schema)
        try:
            await install(conn, self.schema)
            qm = self._qm = QueueManager(Queries(SplitDriver(conn, queue_listener)))
            for agent_id in self.agents:
                limit = self.per_agent.get(agent_id, 0)
                qm.entrypoint(run_entrypoint(agent_id), concurrency_limit=limit)(self._run_job)
            qm.entrypoint(DECISION)(self._decision_job)
            qm.entrypoint(CANCEL)(self._cancel_job)
            qm.entrypoint(EXPIRE)(self._expire_job)
            watch = asyncio.create_task(self._watch_cancels(listener))
            # One job per dequeue: a run is long next to a dequeue, and pgqueuer flushes a
            # finished job's status once a batch of them is done (or after a timeout).
            batch = 1
            try:
                await qm.run(
                    # The longest wait for a job queued without a NOTIFY reaching us (the
                    # LISTEN connection is separate, see _driver, so queries never wait on it).
                    dequeue_timeout=self.poll,
                    batch_size=batch,
                    max_concurrent_tasks=max(self.concurrency, 2 * batch),
                    heartbeat_timeout=self.heartbeat_timeout,
                    mode=QueueExecutionMode.drain if drain else QueueExecutionMode.continuous,
                    # Folding the job log into statistics on a timer only matters for a
                    # long-lived worker; a drain would wait for its first round.
                    log_aggregation_interval=timedelta(0 if drain else 30),
                )
            finally:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch
        finally:
            await self._ingress.close()
            await listener.close()
            await queue_listener.close()
            await conn.close()

    # -- jobs ------------------------------------------------------------------------

    async def _run_job(self, job: Job) -> None:
        spec = RunJob.model_validate_json(job.payload or b"{}")
        if spec.not_before is not None and spec.not_before > datetime.now(UTC):
            # A wake-up run, and the database's clock ran ahead of ours: never early.
            raise RetryRequested(delay=spec.not_before - datetime.now(UTC), reason="not yet")
        async with self._slots:
            token = CancellationToken()
            # One shared connection (the ingress's), not a new one per job.
            cancelled = await self._ingress.is_cancelled(spec.run_id)
            record = await self.runtime.store.get_run(spec.run_id)  # type: ignore[attr-defined]
            if record is not None and record.phase is not Phase.RUNNING:
                # A repeated delivery of a run that ended or waits: its worker may have died
                # between its end record and its log's RunFinish (finish the log from the
                # record), or between the park and queueing the park's wake-ups (queue them).
                await finish_event_log(self.runtime.store, spec.run_id)
                if record.phase is Phase.WAITING:
                    await self._wake_parked(spec.thread_id)
                else:
                    await self._wake_ended(spec, record)
                return
            if cancelled:
                if record is None:
                    return  # cancelled before it started: it never does
                token.cancel("cancelled through the ingress")
            self.live[spec.run_id] = token
            try:
                await self._patiently(job, lambda: self._start(spec, token))
            finally:
                self.live.pop(spec.run_id, None)

    async def _start(self, spec: RunJob, token: CancellationToken) -> None:
        """Start the run, or continue it if a worker already started it (read on every
        attempt: the run may have started since the job was taken, by a worker that
        then died); a run that ended or waits meanwhile is left alone."""
        state: RunState | None
        store = self.runtime.store
        record = await store.get_run(spec.run_id)  # type: ignore[attr-defined]
        if record is not None and record.phase is not Phase.RUNNING:
            return
        if record is None:
            events = RunEvents(store, spec.run_id)
            state = await self.runtime.run(
                spec.agent_id,
                spec.input,
                thread_id=spec.thread_id,
                run_id=spec.run_id,
                profile_id=spec.profile_id,
                namespace=spec.namespace,
                cancel=token,
                on_event=events,
                actions=[ScheduledAction.model_validate(a) for a in spec.actions],
            )
        else:  # its worker died mid-run: continue from the last committed step
            events = await RunEvents.continuing(store, spec.run_id)
            state = await self.runtime.continue_run(
                spec.thread_id,
                profile_id=spec.profile_id,
                namespace=spec.namespace,
                cancel=token,
                on_event=events,
            )
        await events.drain()
        await self._wake_later(state, spec.profile_id, spec.namespace)

    async def _wake_parked(self, thread_id: str) -> None:
        snap = await self.runtime.store.load(ScopeBinding(thread_id, "default", "default"))
        if snap.parked is not None:
            await self._wake(snap.parked.tickets)

    async def _wake_later(
        self, state: RunState | None, profile_id: str = "default", namespace: str = "default"
    ) -> None:
        """Queue the timed wake-ups of a run that parked (a ``Schedule``-d call's approval
        at its time, the expiry check of every ticket with a deadline) or that ended with
        time-based scheduled actions pending (a wake-up run at the earliest time)."""
        if state is None:
            return
        if state.phase is Phase.WAITING:
            await self._wake(state.tickets)
        elif state.pending_actions:
            await self._ingress.wake(
                state.agent_id,
                state.thread_id,
                state.run_id,
                state.pending_actions,
                profile_id=profile_id,
                namespace=namespace,
            )

    async def _wake_ended(self, spec: RunJob, record: RunRecord) -> None:
        """A redelivered job of a run that ended: its worker may have died before queueing
        the wake-up of its pending actions, which the run's stored record still names."""
        if record.pending_actions:
            await self._ingress.wake(
                spec.agent_id,
                spec.thread_id,
                spec.run_id,
                record.pending_actions,
                profile_id=spec.profile_id,
                namespace=spec.namespace,
            )

    async def _wake(self, tickets: list[ResumeTicket]) -> None:
        for ticket in tickets:
            if ticket.await_reason is AwaitReason.SCHEDULED_ACTION and ticket.not_before:
                await self._ingress.decide(ticket, Approve(), at=ticket.not_before)
            if ticket.deadline is not None:
                await self._ingress.expire_at(ticket, ticket.deadline)

    async def _patiently(self, job: Job, start: Callable[[], Awaitable[object]]) -> None:
        """``start()``, waiting in place while the thread is busy for up to two lease
        periods (a dead worker's lease lapses within one), then re-queueing the job."""
        ttl = float(getattr(self.runtime.store, "lease_ttl", 30.0))
        waited, pause = 0.0, min(0.25, ttl / 4)
        while True:
            try:
                await start()
                return
            except ThreadBusy as exc:
                if waited >= 2 * ttl:
                    self._retry(job, exc)
                    return
            await asyncio.sleep(pause)
            waited += pause

    async def _decision_job(self, job: Job) -> None:
        spec = DecisionJob.model_validate_json(job.payload or b"{}")
        ticket = ResumeTicket.model_validate(spec.ticket)
        async with self._slots:
            token = CancellationToken()
            self.live[ticket.run_id] = token
            try:
                if ticket.not_before is not None and ticket.not_before > datetime.now(UTC):
                    # The database's clock ran ahead of ours: never resume early.
                    delay = ticket.not_before - datetime.now(UTC)
                    raise RetryRequested(delay=delay, reason="scheduled for later")
                decision = cast("Decision", spec.decision)
                states: list[RunState] = []
                binding = ScopeBinding(ticket.thread_id, "default", "default")
                where = (await self.runtime.store.load(binding)).parked
                events = RunEvents(self.runtime.store, ticket.run_id)

                async def resume() -> None:
                    states.append(
                        await self.runtime.resume(ticket, decision, cancel=token, on_event=events)
                    )

                await self._patiently(job, resume)
                await events.drain()
                await self._wake_later(
                    states[-1] if states else None,
                    where.profile_id if where is not None else "default",
                    where.namespace if where is not None else "default",
                )
            except ResumeRejected as exc:
                log.info("decision on ticket %s not applied: %s", ticket.ticket_id, exc)
                await self._wake_parked(ticket.thread_id)  # a redelivery after a crash
            finally:
                self.live.pop(ticket.run_id, None)

    async def _cancel_job(self, job: Job) -> None:
        run_id = (job.payload or b"").decode()
        token = self.live.get(run_id)
        if token is not None:
            token.cancel("cancelled through the ingress")
            return
        record = await self.runtime.store.get_run(run_id)  # type: ignore[attr-defined]
        if record is not None and record.phase is Phase.WAITING:
            with contextlib.suppress(ResumeRejected):
                await self.runtime.cancel_waiting(record.thread_id)

    async def _expire_job(self, job: Job) -> None:
        ticket = ResumeTicket.model_validate_json(job.payload or b"{}")
        if ticket.deadline is not None and ticket.deadline > datetime.now(UTC):
            raise RetryRequested(delay=ticket.deadline - datetime.now(UTC), reason="not yet")
        store = self.runtime.store
        snap = await store.load(ScopeBinding(ticket.thread_id, "default", "default"))
        parked = snap.parked
        if parked is None or ticket.ticket_id not in {t.ticket_id for t in parked.tickets}:
            return  # decided in time
        with contextlib.suppress(ResumeRejected):
            await self.runtime.cancel_waiting(ticket.thread_id)

    def _retry(self, job: Job, exc: Exception) -> None:
        if job.attempts >= _BUSY_ATTEMPTS:
            log.error("dropping job %s after %d attempts: %s", job.id, job.attempts, exc)
            return
        raise RetryRequested(delay=self.retry_delay, reason=str(exc))

    # -- cancels ---------------------------------------------------------------------

    async def _watch_cancels(self, conn: Any) -> None:
        await conn.execute(f"LISTEN {CANCEL_CHANNEL}".encode())
        async for note in conn.notifies():
            token = self.live.get(note.payload)
            if token is not None:
                token.cancel("cancelled through the ingress")
