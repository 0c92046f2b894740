"""Recovering a thread a dead process left behind (its lease lapsed).

A run whose process died keeps a ``RUNNING`` record, or a parked record
whose tickets were all claimed by a resume that never finished. The runtime
ends such a run, holding the thread's lease (which proves the old process is
gone), before it starts anything new on the thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .._errors import VersionConflict
from ..lifecycle._failures import Phase
from ..run._signals import abandoned
from ..stores._lease import LeaseGuard, guard_lease
from ..stores._thread_store import ScopeBinding, ThreadSnapshot, ThreadStore
from ..suspension._suspension import ThreadBusy

if TYPE_CHECKING:
    from ..lifecycle._run_state import RunState
    from ..stores._ports import Lease
    from ..tools._cancel import CancellationToken
    from ._runtime import Runtime
    from ._streaming import EventSink

__all__ = ["carry_on", "end_dead_run", "recover", "stranded", "sweep"]


def stranded(snapshot: ThreadSnapshot) -> bool:
    """A run left behind by a dead process: parked with no ticket, still RUNNING, or
    WAITING on a thread that is no longer parked (a resume that died mid-step)."""
    parked, latest = snapshot.parked, snapshot.latest_run
    if parked is not None:
        return not parked.tickets
    return latest is not None and latest.phase is not Phase.ENDED


async def end_dead_run(
    store: ThreadStore, binding: ScopeBinding, snapshot: ThreadSnapshot, lease: Lease
) -> None:
    """End the ``RUNNING`` record of a run that died mid-step (its whole steps are kept),
    under ``lease`` (a commit fenced by it: refused once another holder took the thread)."""
    dead = snapshot.latest_run
    assert dead is not None
    cause = abandoned(
        binding.thread_id, f"the process running run {dead.run_id!r} stopped before it ended"
    )
    record = dead.model_copy(
        update={"phase": Phase.ENDED, "end_cause": cause, "updated_at": datetime.now(UTC)}
    )
    await store.commit(binding, snapshot.version, [], [], run_record=record, lease=lease)


async def recover(
    runtime: Runtime,
    binding: ScopeBinding,
    snapshot: ThreadSnapshot,
    lease: LeaseGuard,
    run_id: str | None = None,
) -> ThreadSnapshot:
    """End the run a dead process left on the thread (``stranded(snapshot)`` is true).

    Call it only with the thread's lease held. A run that died mid-step kept
    its whole steps only, so just its record is ended; a run whose resume died
    after the claim is ended through its loop (its claimed calls: outcome
    unknown). Either way the cause is ``Error(AbandonedFailure)``. Returns the
    thread as it is now; raises ``ThreadBusy`` if the run turns out to be alive
    (it let its lease lapse but committed meanwhile, so it is still stranded), or if
    the stranded run is ``run_id`` itself: a run started again under its own id (a
    redelivered job) must be continued (``continue_run``), never ended and re-run.
    """
    thread_id = binding.thread_id
    latest = snapshot.latest_run
    if run_id is not None and latest is not None and latest.run_id == run_id:
        raise ThreadBusy(
            f"thread {thread_id!r}: run {run_id!r} was already started here and its "
            f"process stopped; continue it with Runtime.continue_run, not run"
        )
    if snapshot.parked is None:
        try:
            await end_dead_run(runtime.store, binding, snapshot, lease.lease)
        except VersionConflict as exc:
            # Its lease lapsed, but it is alive: it committed since (a paused process).
            dead = snapshot.latest_run.run_id if snapshot.latest_run else "?"
            raise ThreadBusy(
                f"thread {thread_id!r}: run {dead!r} let its lease lapse but is still "
                f"committing; it stops at its next lease check - retry then"
            ) from exc
    else:
        from ..run._resume import Resumer  # only a dead resume needs the resume machinery
        from ._tickets import load_parked

        stored, parked = await load_parked(runtime.store, thread_id)
        scoped = ScopeBinding(thread_id, parked.profile_id, parked.namespace)
        agent = runtime._agent(parked.agent_id)
        loop = runtime._new_loop(agent, scoped, parked.run_id, None, None, lease)
        legs = Resumer(loop)
        legs.restore(stored, parked)
        await legs.abandon(parked)
    now = await runtime.store.load(binding)
    if stranded(now):
        # The abandon lost to a commit of the run itself: it is alive, if late.
        raise ThreadBusy(
            f"thread {thread_id!r}: its last run let its lease lapse but is still "
            f"committing; it stops at its next lease check - retry then"
        )
    return now


async def sweep(runtime: Runtime, thread_ids: Iterable[str] | None = None) -> list[str]:
    """End the runs dead processes left on ``thread_ids`` (default: every thread).

    A thread whose lease is live is skipped: its run is alive somewhere. Only
    stores with leases can prove a run dead; on others this finds nothing.
    Returns the ids of the runs it ended (``Error(AbandonedFailure)``).
    """
    store = runtime.store
    ids = list(thread_ids) if thread_ids is not None else await _every_thread(store)
    ended: list[str] = []
    for thread_id in ids:
        async with runtime._lock(thread_id):
            try:
                async with guard_lease(store, thread_id) as lease:
                    if lease is None:
                        return ended
                    binding = ScopeBinding(thread_id, "default", "default")
                    snapshot = await store.load(binding)
                    if not stranded(snapshot):
                        continue
                    parked, latest = snapshot.parked, snapshot.latest_run
                    dead = parked.run_id if parked else latest.run_id if latest else ""
                    await recover(runtime, binding, snapshot, lease)
                    ended.append(dead)
            except ThreadBusy:
                continue
    return ended


async def _every_thread(store: ThreadStore) -> list[str]:
    lister = getattr(store, "list_threads", None)
    if not callable(lister):
        return []
    ids: list[str] = []
    after: str | None = None
    while True:
        page = await lister(after=after, limit=500)
        ids += [info.thread_id for info in page]
        if len(page) < 500:
            return ids
        after = page[-1].thread_id


async def carry_on(
    runtime: Runtime,
    binding: ScopeBinding,
    cancel: CancellationToken | None,
    on_event: EventSink | None,
) -> RunState | None:
    """Continue the run a dead process left ``RUNNING`` on the thread, from its last step.

    ``None`` when the thread has no such run (it ended, waits for decisions, or
    never started). Raises ``ThreadBusy`` while the dead process's lease is live.
    """
    async with (
        runtime._lock(binding.thread_id),
        guard_lease(runtime.store, binding.thread_id) as lease,
    ):
        snapshot = await runtime.store.load(binding)
        latest = snapshot.latest_run
        if snapshot.parked is not None or latest is None or latest.phase is not Phase.RUNNING:
            return None
        if lease is None:
            raise ThreadBusy(
                f"thread {binding.thread_id!r}: the store has no leases, so nothing proves "
                f"run {latest.run_id!r} is dead; use a store with leases to continue runs"
            )
        await runtime._refresh(latest.agent_id)  # catalog tools (MCP servers) listed first
        agent = runtime._agent(latest.agent_id)
        loop = runtime._new_loop(agent, binding, latest.run_id, cancel, on_event, lease)
        return await loop.carry_on(snapshot, latest)
