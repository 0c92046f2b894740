"""Streaming a run: its events as an async iterator, logged to the store as they pass."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ..lifecycle._events import AgentEvent, RunFinish
from ..lifecycle._run_state import RunState
from ._event_log import EventLog

if TYPE_CHECKING:
    from ..stores._thread_store import ThreadStore

__all__ = ["EventSink", "stream_run"]

EventSink = Callable[[AgentEvent], None]


async def stream_run(
    start: Callable[[EventSink], Coroutine[Any, Any, RunState]],
    store: ThreadStore,
) -> AsyncIterator[AgentEvent]:
    """Run ``start(sink)`` as a task and yield what it emits until ``RunFinish``.

    Every yielded event also goes to the ``store``'s event log, if it has one
    (``StreamCheckpointStore``).
    """
    log = EventLog(store)
    queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
    task = asyncio.ensure_future(start(queue.put_nowait))
    task.add_done_callback(lambda _t: queue.put_nowait(None))
    root: str | None = None  # sub-agent events share the stream; stop at the root's finish
    try:
        while True:
            item = await queue.get()
            if item is None:
                await task  # re-raises what the run raised
                return
            if root is None:
                root = item.run_id
            await log.add(item)
            yield item
            if isinstance(item, RunFinish) and item.run_id == root:
                await task
                return
    finally:
        if not task.done():
            task.cancel()
