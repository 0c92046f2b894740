"""Writing streamed events to the store's per-run event log (resumable streams).

``Runtime.stream`` hands every event it yields to an :class:`EventLog`. Events
are buffered per run and appended to the store at each ``StepEnd`` and
``RunFinish``, so the log costs one write per step, not one per token, and a
crash loses at most the events of the step in flight. A client that
reconnects reads what it missed with ``Runtime.read_events(run_id, after)``.
Stores without an event log (no ``append_events``) are simply not written.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeGuard

from ..lifecycle._events import AgentEvent, RunFinish, StepEnd, event_adapter

if TYPE_CHECKING:
    from ..stores._ports import StreamCheckpointStore
    from ..stores._thread_store import ThreadStore

__all__ = ["EventLog", "has_event_log", "lost_its_thread", "read_events"]

log = logging.getLogger("awaken_runtime")

_SUPPORT: dict[type[object], bool] = {}


def has_event_log(store: ThreadStore) -> TypeGuard[StreamCheckpointStore]:
    """Whether ``store`` (any store) implements ``StreamCheckpointStore``."""
    kind = type(store)
    known = _SUPPORT.get(kind)
    if known is None:
        known = _SUPPORT[kind] = callable(getattr(kind, "append_events", None)) and callable(
            getattr(kind, "read_events", None)
        )
    return known


async def read_events(store: ThreadStore, run_id: str, after: int) -> list[AgentEvent]:
    """Every logged event of ``run_id`` with ``seq > after`` (none without an event log)."""
    if not has_event_log(store):
        return []
    from ._log_repair import finish_event_log

    await finish_event_log(store, run_id)  # a run that stopped: its log ends too
    out: list[AgentEvent] = []
    while True:
        page = await store.read_events(run_id, after)
        if not page:
            return out
        out.extend(event_adapter.validate_python(e.data) for e in page)
        after = page[-1].seq


def lost_its_thread(event: AgentEvent) -> bool:
    """Whether ``event`` is the ``RunFinish`` of a leg that lost its lease.

    Such a leg wrote nothing of its end (its commits are fenced): the run goes
    on with the holder that took the thread, so this finish is not the run's
    and must not reach its log (a follower would stop at it).
    """
    if not isinstance(event, RunFinish):
        return False
    cause = event.end_cause
    failure = getattr(cause, "failure", None)
    return failure is not None and getattr(failure, "kind", None) == "lease_lost"


class EventLog:
    """Buffers events per run and appends them at step boundaries.

    An append the store refuses (its seqs are not after the stored ones: the
    log was finished from the committed record meanwhile, see ``_log_repair``)
    stops the logging of that run; the events stay in the stream.
    """

    def __init__(self, store: ThreadStore) -> None:
        self._store = store if has_event_log(store) else None
        self._pending: dict[str, list[Any]] = {}
        self._refused: set[str] = set()

    async def add(self, event: AgentEvent) -> None:
        """Record ``event``; write its run's buffer if it closes a step or the run."""
        if self._store is None or event.run_id in self._refused:
            return
        if lost_its_thread(event):
            self._pending.pop(event.run_id, None)
            return
        from ..stores import StreamEvent

        self._pending.setdefault(event.run_id, []).append(
            StreamEvent(seq=event.seq, data=event.model_dump(mode="json"))
        )
        if isinstance(event, (StepEnd, RunFinish)):
            await self.flush(event.run_id)

    async def flush(self, run_id: str | None = None) -> None:
        """Append what is buffered (for one run, or for all)."""
        if self._store is None:
            return
        for rid in [run_id] if run_id is not None else list(self._pending):
            events = self._pending.pop(rid, None)
            if events:
                try:
                    await self._store.append_events(rid, events)
                except ValueError as exc:
                    self._refused.add(rid)
                    log.warning("stopped logging the events of run %s: %s", rid, exc)
