"""What a database store keeps of the threads it decoded, so a later load decodes only what is new.

A store that reads messages from a database (SQLite here, PostgreSQL in
awaken-store-postgres) keeps each recently loaded thread's decoded messages
with what identifies the rows they came from: the thread's edit count (which
the store's triggers bump on any update, delete or replace of a message row)
and the seqs of the first and last kept rows. The store checks those against
the database inside the load's snapshot and then fetches only the rows after
``last``; if anything else changed it decodes the whole thread again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from ..messages._call_ids import call_ids_of
from ..messages._message import Message

__all__ = ["KeptThread", "KeptThreads"]


@dataclass(frozen=True, slots=True)
class KeptThread:
    """One thread's decoded messages and what they were read from."""

    messages: list[Message]
    """Never changed once kept (a load hands out a copy; a later one keeps a longer list)."""
    edits: int
    """The thread's edit count when the messages were read."""
    first: int
    last: int
    """The seqs of the first and last kept rows."""
    call_ids: frozenset[str]
    """Every tool-call id of the messages (a run needs them; keeping them makes them O(new))."""

    @classmethod
    def read(cls, messages: list[Message], edits: int, first: int, last: int) -> KeptThread:
        """A thread decoded whole."""
        return cls(messages, edits, first, last, frozenset(call_ids_of(messages)))

    def extended(self, new: Sequence[Message], edits: int, last: int) -> KeptThread:
        """This thread with the rows after ``self.last`` appended (up to seq ``last``).

        A new list (a copy of references, no decoding): two loads of one thread that
        overlap (the PostgreSQL store fetches, then decodes) each extend what they saw.
        """
        messages = [*self.messages, *new]
        added = call_ids_of(new)
        call_ids = self.call_ids | added if added else self.call_ids
        return KeptThread(messages, edits, self.first, last, call_ids)


class KeptThreads:
    """The kept threads, least recently loaded dropped first past either bound."""

    def __init__(self, max_threads: int = 256, max_messages: int = 500_000) -> None:
        self.max_threads = max_threads
        self.max_messages = max_messages
        """Messages kept over all threads."""
        self._kept: OrderedDict[str, KeptThread] = OrderedDict()
        self._count = 0

    def get(self, tid: str) -> KeptThread | None:
        """The kept thread, if any (still kept)."""
        return self._kept.get(tid)

    def forget(self, tid: str) -> KeptThread | None:
        """Drop a thread (deleted, or about to be replaced); what was kept of it."""
        kept = self._kept.pop(tid, None)
        if kept is not None:
            self._count -= len(kept.messages)
        return kept

    def keep(self, tid: str, kept: KeptThread) -> None:
        """Keep ``kept`` as the thread's latest (replacing what was kept of it)."""
        self.forget(tid)
        self._kept[tid] = kept
        self._count += len(kept.messages)
        while self._kept and (
            len(self._kept) > self.max_threads or self._count > self.max_messages
        ):
            _tid, old = self._kept.popitem(last=False)
            self._count -= len(old.messages)
