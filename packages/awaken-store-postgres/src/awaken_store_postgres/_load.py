"""Loading a thread's messages at a cost proportional to what is new.

The first load of a thread decodes every row with one validation call. The
decoded messages are kept (for a bounded number of threads) and a later load
fetches and decodes only the rows appended since, after checking, in the same
snapshot, that nothing else happened to the kept ones: the thread's edit count
(bumped by a trigger on any update or delete of a message row, see
``_schema.py``) is unchanged, and the first and last kept rows still hold the
kept messages' ids (a thread deleted and re-created elsewhere, a restored
database). Otherwise the whole thread is fetched and decoded again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from pydantic import TypeAdapter

from awaken_runtime import Message

__all__ = ["MessageCache"]

_MESSAGES = TypeAdapter(list[Message])

_LOAD = (
    "SELECT t.version, t.parked, r.body, "
    "(SELECT n FROM message_edits WHERE thread_id=%(t)s), "
    "(SELECT msg_id FROM messages WHERE thread_id=%(t)s AND seq=%(first)s), "
    "(SELECT msg_id FROM messages WHERE thread_id=%(t)s AND seq=%(last)s), "
    "(SELECT min(seq) FROM messages WHERE thread_id=%(t)s), "
    "(SELECT max(seq) FROM messages WHERE thread_id=%(t)s), "
    "(SELECT string_agg(body, ',' ORDER BY seq) FROM messages "
    "WHERE thread_id=%(t)s AND seq>%(last)s) "
    "FROM threads t LEFT JOIN runs r ON r.run_id = t.latest_run WHERE t.thread_id=%(t)s"
)
_ALL = "SELECT string_agg(body, ',' ORDER BY seq) FROM messages WHERE thread_id=%s"


def call_ids_of(messages: list[Message]) -> set[str]:
    """Every tool-call id the assistant messages of ``messages`` carry."""
    return {c.id for m in messages if m.tool_calls for c in m.tool_calls}


@dataclass(frozen=True, slots=True)
class _Kept:
    messages: list[Message]
    edits: int
    """The thread's edit count when the messages were read."""
    first: int
    last: int
    """The seqs of the first and last kept rows."""
    call_ids: frozenset[str]
    """Every tool-call id of the messages (the run needs them; the cache makes them O(new))."""


@dataclass(slots=True)
class Loaded:
    """A thread row as loaded, with its messages still to decode (:meth:`MessageCache.decode`)."""

    version: int
    parked: str | None
    run: str | None
    kept: _Kept | None
    """What the new rows follow (``None``: ``bodies`` are all of them)."""
    bodies: str
    edits: int
    first: int
    last: int


class MessageCache:
    """Decoded messages of recently loaded threads, checked against the database."""

    def __init__(self, max_threads: int = 256, max_messages: int = 500_000) -> None:
        self.max_threads = max_threads
        self.max_messages = max_messages
        """Messages kept over all threads; the least recently loaded threads go first."""
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._count = 0

    async def fetch(self, conn: AsyncConnection[Any], tid: str) -> Loaded | None:
        """The thread row and the message rows not kept (inside the load's snapshot)."""
        kept = self._kept.get(tid)
        args = {"t": tid, "first": kept.first if kept else 0, "last": kept.last if kept else 0}
        cur = await conn.execute(_LOAD, args)
        row = await cur.fetchone()
        if row is None:
            self.forget(tid)
            return None
        version, parked, run, edits, first_id, last_id, first, last, bodies = row
        edits = int(edits or 0)
        if kept is not None and (
            edits != kept.edits
            or first_id != kept.messages[0].id
            or last_id != kept.messages[-1].id
        ):
            kept = None
            cur = await conn.execute(_ALL, (tid,))
            (bodies,) = await cur.fetchone() or (None,)
        return Loaded(
            int(version), parked, run, kept, bodies or "", edits, int(first or 0), int(last or 0)
        )

    def decode(self, tid: str, loaded: Loaded) -> tuple[list[Message], frozenset[str]]:
        """Every message of the thread in order (one validation call for the new rows) and
        their tool-call ids."""
        # One validation call for the whole list is much faster than one per row.
        new = _MESSAGES.validate_json("[" + loaded.bodies + "]")
        kept = loaded.kept
        if kept is not None:
            messages = kept.messages + new
            added = call_ids_of(new)
            call_ids = kept.call_ids | added if added else kept.call_ids
            first = kept.first
        else:
            messages, call_ids, first = new, frozenset(call_ids_of(new)), loaded.first
        self.forget(tid)
        if messages:
            self._keep(tid, _Kept(messages, loaded.edits, first, loaded.last, call_ids))
        return list(messages), call_ids

    def forget(self, tid: str) -> None:
        """Drop a thread (deleted)."""
        kept = self._kept.pop(tid, None)
        if kept is not None:
            self._count -= len(kept.messages)

    def _keep(self, tid: str, kept: _Kept) -> None:
        self._kept[tid] = kept
        self._count += len(kept.messages)
        while self._kept and (
            len(self._kept) > self.max_threads or self._count > self.max_messages
        ):
            _tid, old = self._kept.popitem(last=False)
            self._count -= len(old.messages)
