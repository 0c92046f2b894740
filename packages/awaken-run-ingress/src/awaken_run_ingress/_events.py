"""A worker's run events, written to the store's event log a step at a time.

``awaken serve --ingress`` does not run agents itself: it follows each run's
event log (``tail_events``), so the worker must write one. Events are
buffered per run and appended at every ``StepEnd`` and ``RunFinish``, in
order (each append waits for the one before), the same granularity as
``Runtime.stream``'s own log. A run continued after its worker died starts
counting its events at 1 again; they are renumbered after the last logged
one, so a follower's ``seq`` keeps increasing.
"""

from __future__ import annotations

import asyncio
import logging

from awaken_runtime import AgentEvent, RunFinish, StepEnd
from awaken_runtime.stores import StreamCheckpointStore, StreamEvent, ThreadStore

__all__ = ["RunEvents", "last_logged", "lost_its_thread"]

log = logging.getLogger("awaken_run_ingress")


async def last_logged(store: ThreadStore, run_id: str) -> list[StreamEvent]:
    """The last logged page of ``run_id``'s events (empty without a ``StreamCheckpointStore``)."""
    if not isinstance(store, StreamCheckpointStore):
        return []
    after, last = 0, list[StreamEvent]()
    while True:
        page = await store.read_events(run_id, after)
        if not page:
            return last
        last, after = page, page[-1].seq


def lost_its_thread(event: AgentEvent) -> bool:
    """Whether ``event`` is the ``RunFinish`` of a leg that lost its lease (fenced: it
    committed nothing of its end, so the run is not finished)."""
    failure = getattr(event.end_cause, "failure", None) if isinstance(event, RunFinish) else None
    return getattr(failure, "kind", None) == "lease_lost"


class RunEvents:
    """The ``on_event`` sink of one job: buffers, renumbers and appends its events."""

    def __init__(self, store: ThreadStore, root_run_id: str, base: int = 0) -> None:
        self._store = store if isinstance(store, StreamCheckpointStore) else None
        self._root, self._base = root_run_id, base
        self._pending: dict[str, list[StreamEvent]] = {}
        self._refused: set[str] = set()
        self._writes: asyncio.Task[None] | None = None
        self.finish: RunFinish | None = None
        """The root run's last ``RunFinish`` seen (what a wake-up is queued from)."""

    @classmethod
    async def continuing(cls, store: ThreadStore, run_id: str) -> RunEvents:
        """The sink of a run continued after a crash: numbering after its last logged event."""
        page = await last_logged(store, run_id)
        return cls(store, run_id, page[-1].seq if page else 0)

    def __call__(self, event: AgentEvent) -> None:
        if lost_its_thread(event):
            # The leg lost its lease and wrote nothing of its end: the run goes on with
            # the worker that took it, and this finish is not the run's (a follower
            # would stop at it). What it buffered since its last step goes too.
            self._pending.pop(event.run_id, None)
            return
        if event.run_id in self._refused:
            return
        if event.run_id == self._root:
            if self._base:
                event = event.model_copy(update={"seq": event.seq + self._base})
            if isinstance(event, RunFinish):
                self.finish = event
        store = self._store
        if store is None:
            return
        data = event.model_dump(mode="json")
        self._pending.setdefault(event.run_id, []).append(StreamEvent(seq=event.seq, data=data))
        if isinstance(event, (StepEnd, RunFinish)):
            batch = self._pending.pop(event.run_id)
            self._writes = asyncio.ensure_future(
                self._append(store, self._writes, event.run_id, batch)
            )

    async def _append(
        self,
        store: StreamCheckpointStore,
        before: asyncio.Task[None] | None,
        run_id: str,
        batch: list[StreamEvent],
    ) -> None:
        if before is not None:
            await before
        if run_id in self._refused:
            return
        try:
            await store.append_events(run_id, batch)
        except ValueError as exc:
            # Seqs not after the stored ones: another writer (a worker that took the run
            # over, or a repair from the committed record) logged meanwhile. Appending
            # later batches after theirs would interleave two accounts of the run.
            self._refused.add(run_id)
            log.warning("stopped logging run %s: %s", run_id, exc)
        except Exception:  # the steps are committed; only followers miss these events
            log.exception("could not log %d events of run %s", len(batch), run_id)

    async def drain(self) -> None:
        """Wait until every closed step's events are appended."""
        if self._writes is not None:
            await self._writes
