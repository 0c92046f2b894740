"""``RunIngress``: submit runs, decisions and cancels as durable jobs."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Self

from pgqueuer import PsycopgDriver, Queries

from awaken_runtime import Decision, Message, ResumeTicket, ScheduledAction, check_id

from ._jobs import CANCEL, DECISION, EXPIRE, RUN, DecisionJob, RunJob
from ._schema import CANCEL_CHANNEL, connect, install

__all__ = ["RunIngress", "Submitted", "run_entrypoint"]


def _after(at: datetime | None) -> timedelta | None:
    if at is None:
        return None
    return max(at - datetime.now(UTC), timedelta(0))


def run_entrypoint(agent_id: str) -> str:
    """The queue entrypoint of ``agent_id``'s runs (one per agent: per-agent limits)."""
    return f"{RUN}.{agent_id}"


@dataclass(frozen=True, slots=True)
class Submitted:
    """What ``submit`` returns at once: the ids to follow the run by."""

    run_id: str
    thread_id: str
    job_id: int


class RunIngress:
    """The submitting side of the queue: a web tier, a script, a cron job.

    ``RunIngress(dsn, schema="awaken_ingress")`` does no I/O; :meth:`open`
    connects and installs the tables (once). Jobs are at least once; the
    workers' store makes each step effectively once.
    """

    def __init__(self, dsn: str, *, schema: str = "awaken_ingress") -> None:
        self.dsn = dsn
        self.schema = schema
        self._conn: Any = None
        self._queries: Queries | None = None

    async def open(self) -> Self:
        """Connect and install the queue tables if missing."""
        if self._conn is None:
            self._conn = await connect(self.dsn, self.schema)
            await install(self._conn, self.schema)
            self._queries = Queries(PsycopgDriver(self._conn))
        return self

    async def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            await self._conn.close()
            self._conn, self._queries = None, None

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _q(self) -> Queries:
        await self.open()
        assert self._queries is not None
        return self._queries

    async def submit(
        self,
        agent_id: str,
        input: str | Message | list[Message],
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        profile_id: str = "default",
        namespace: str = "default",
    ) -> Submitted:
        """Queue a run; returns its ids at once. A repeated ``run_id`` queues nothing new
        while the first job is pending (its dedupe key)."""
        messages = [Message.user(input)] if isinstance(input, str) else input
        job = RunJob(
            run_id=run_id or "run_" + os.urandom(12).hex(),
            agent_id=agent_id,
            thread_id=thread_id or "thread_" + os.urandom(12).hex(),
            profile_id=profile_id,
            namespace=namespace,
            input=[messages] if isinstance(messages, Message) else list(messages),
        )
        for kind, value in (("thread id", job.thread_id), ("run id", job.run_id)):
            check_id(kind, value)
        queries = await self._q()
        (job_id,) = await queries.enqueue(
            run_entrypoint(agent_id),
            job.model_dump_json().encode(),
            dedupe_key=f"run:{job.run_id}",
            on_conflict="skip",
        )
        return Submitted(job.run_id, job.thread_id, int(job_id) if job_id is not None else 0)

    async def decide(
        self,
        ticket: ResumeTicket | dict[str, Any],
        decision: Decision,
        *,
        at: datetime | None = None,
    ) -> None:
        """Queue a decision for a waiting run's ticket; a duplicate collapses to one.

        ``at`` delays it (workers queue a ``Schedule``-d call's approval for its time).
        """
        stored = ticket if isinstance(ticket, ResumeTicket) else ResumeTicket.model_validate(ticket)
        job = DecisionJob(
            ticket=stored.model_dump(mode="json"), decision=decision.model_dump(mode="json")
        )
        queries = await self._q()
        await queries.enqueue(
            DECISION,
            job.model_dump_json().encode(),
            execute_after=_after(at),
            dedupe_key=f"decision:{stored.ticket_id}",
            on_conflict="skip",
        )

    async def wake(
        self,
        agent_id: str,
        thread_id: str,
        after_run: str,
        actions: list[ScheduledAction],
        *,
        profile_id: str = "default",
        namespace: str = "default",
    ) -> Submitted | None:
        """Queue the wake-up run of a thread whose run ``after_run`` ended with
        time-based ``actions`` pending: a new run (no input) at the earliest of their
        times, carrying them all. Its id derives from ``after_run``, so queueing it twice
        (a redelivered job) starts one run. ``None`` if no action has a time."""
        times = [a.at for a in actions if a.at is not None]
        if not times:
            return None
        digest = hashlib.blake2b(after_run.encode(), digest_size=12).hexdigest()
        at = min(times)
        job = RunJob(
            run_id=f"wake_{digest}",
            agent_id=agent_id,
            thread_id=thread_id,
            profile_id=profile_id,
            namespace=namespace,
            actions=[a.model_dump(mode="json") for a in actions],
            not_before=at,
        )
        queries = await self._q()
        (job_id,) = await queries.enqueue(
            run_entrypoint(agent_id),
            job.model_dump_json().encode(),
            execute_after=_after(at),
            dedupe_key=f"run:{job.run_id}",
            on_conflict="skip",
        )
        return Submitted(job.run_id, thread_id, int(job_id) if job_id is not None else 0)

    async def expire_at(self, ticket: ResumeTicket, at: datetime) -> None:
        """Queue the check that cancels the run if ``ticket`` still waits at its deadline."""
        queries = await self._q()
        await queries.enqueue(
            EXPIRE,
            ticket.model_dump_json().encode(),
            execute_after=_after(at),
            dedupe_key=f"expire:{ticket.ticket_id}",
            on_conflict="skip",
        )

    async def is_cancelled(self, run_id: str) -> bool:
        """Whether :meth:`cancel` was called for ``run_id``."""
        await self.open()
        cur = await self._conn.execute(
            b"SELECT 1 FROM awaken_ingress_cancels WHERE run_id = %s", (run_id,)
        )
        return await cur.fetchone() is not None

    async def cancel(self, run_id: str) -> None:
        """Cancel ``run_id`` wherever it is: the worker running it stops at its next
        boundary (``Cancelled``), a waiting run is cancelled, a queued one never starts."""
        await self.open()
        await self._conn.execute(
            b"INSERT INTO awaken_ingress_cancels (run_id) VALUES (%s) ON CONFLICT DO NOTHING",
            (run_id,),
        )
        await self._conn.execute(b"SELECT pg_notify(%s, %s)", (CANCEL_CHANNEL, run_id))
        queries = await self._q()
        await queries.enqueue(
            CANCEL, run_id.encode(), dedupe_key=f"cancel:{run_id}", on_conflict="skip"
        )
