"""Writing streamed events to the store's per-run event log (resumable streams).

``Runtime.stream`` hands every event it yields to an :class:`EventLog`. Events
are buffered per run and appended to the store at each ``StepEnd`` and
``RunFinish``, so the log costs one write per step, not one per token, and a
crash loses at most the events of the step in flight. A client that
reconnects reads what it missed with ``Runtime.read_events(run_id, after)``.
Stores without an event log (no ``append_events``) are simply not written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from ..lifecycle._events import AgentEvent, RunFinish, StepEnd, event_adapter

if TYPE_CHECKING:
    from ..stores._ports import StreamCheckpointStore
    from ..stores._thread_store import ThreadStore

__all__ = ["EventLog", "has_event_log", "read_events"]

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
    out: list[AgentEvent] = []
    while True:
        page = await store.read_events(run_id, after)
        if not page:
            return out
        out.extend(event_adapter.validate_python(e.data) for e in page)
        after = page[-1].seq


class EventLog:
    """Buffers events per run and appends them at step boundaries."""

    def __init__(self, store: ThreadStore) -> None:
        self._store = store if has_event_log(store) else None
        self._pending: dict[str, list[Any]] = {}

    async def add(self, event: AgentEvent) -> None:
        """Record ``event``; write its run's buffer if it closes a step or the run."""
        if self._store is None:
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
                await self._store.append_events(rid, events)
