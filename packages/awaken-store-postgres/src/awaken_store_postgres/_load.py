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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from pydantic import TypeAdapter

from awaken_runtime import Message
from awaken_runtime.stores import KeptThread, KeptThreads

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


@dataclass(slots=True)
class Loaded:
    """A thread row as loaded, with its messages still to decode (:meth:`MessageCache.decode`)."""

    version: int
    parked: str | None
    run: str | None
    kept: KeptThread | None
    """What the new rows follow (``None``: ``bodies`` are all of them)."""
    bodies: str
    edits: int
    first: int
    last: int


class MessageCache(KeptThreads):
    """Decoded messages of recently loaded threads, checked against the database."""

    async def fetch(self, conn: AsyncConnection[Any], tid: str) -> Loaded | None:
        """The thread row and the message rows not kept (inside the load's snapshot)."""
        kept = self.get(tid)
        args = {"t": tid, "first": kept.first if kept else 0, "last": kept.last if kept else 0}
        cur = await conn.execute(_LOAD, args)
        row = await cur.fetchone()
        if row is None:
            self.forget(tid)
            return None
        version, parked, run, edits, first_id, last_id, first, last, bodies = row
        edits = int(edits or 0)
        if kept is not None and (
            edits != kept.edits or first_id != kept.first_id or last_id != kept.last_id
        ):
            kept = None
            cur = await conn.execute(_ALL, (tid,))
            (bodies,) = await cur.fetchone() or (None,)
        return Loaded(
            int(version), parked, run, kept, bodies or "", edits, int(first or 0), int(last or 0)
        )

    def decode(self, tid: str, loaded: Loaded) -> tuple[Sequence[Message], frozenset[str]]:
        """Every message of the thread in order (one validation call for the new rows) and
        their tool-call ids."""
        # One validation call for the whole list is much faster than one per row.
        new = _MESSAGES.validate_json("[" + loaded.bodies + "]")
        kept = loaded.kept
        if kept is not None:
            kept = kept.extended(new, loaded.edits, loaded.last)
        elif new:
            kept = KeptThread.read(new, loaded.edits, loaded.first, loaded.last)
        else:
            self.forget(tid)
            return [], frozenset()
        self.keep(tid, kept)
        return kept.messages.copy(), kept.call_ids
