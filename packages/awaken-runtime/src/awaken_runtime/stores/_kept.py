"""What a database store keeps of the threads it decoded, so a later load decodes only what is new.

A store that reads messages from a database (SQLite here, PostgreSQL in
awaken-store-postgres) keeps each recently loaded thread's messages (decoded,
or rows decoded when first read: ``StoredMessages``) with what identifies the
rows they came from: the thread's edit count (which
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
from ..messages._stored import StoredMessages

__all__ = ["KeptThread", "KeptThreads"]


@dataclass(frozen=True, slots=True)
class KeptThread:
    """One thread's messages (decoded, or rows decoded when first read) and their source."""

    messages: StoredMessages
    """Never grown once kept (a load hands out a copy; a later one keeps a longer one)."""
    edits: int
    """The thread's edit count when the messages were read."""
    first: int
    last: int
    """The seqs of the first and last kept rows."""
    first_id: str
    last_id: str
    """The ids of the first and last kept messages (checked without decoding them)."""
    call_ids: frozenset[str]
    """Every tool-call id of the messages (a run needs them; keeping them makes them O(new))."""

    @classmethod
    def read(cls, messages: Sequence[Message], edits: int, first: int, last: int) -> KeptThread:
        """A thread decoded whole (at least one message)."""
        return cls(
            StoredMessages(messages),
            edits,
            first,
            last,
            messages[0].id,
            messages[-1].id,
            frozenset(call_ids_of(messages)),
        )

    def extended(self, new: Sequence[Message], edits: int, last: int) -> KeptThread:
        """This thread with the decoded rows after ``self.last`` appended (up to seq ``last``).

        A new copy (of references, sharing what is decoded): two loads of one thread that
        overlap (the PostgreSQL store fetches, then decodes) each extend what they saw.
        """
        messages = self.messages.copy()
        messages.extend(new)
        added = call_ids_of(new)
        call_ids = self.call_ids | added if added else self.call_ids
        last_id = new[-1].id if new else self.last_id
        return KeptThread(messages, edits, self.first, last, self.first_id, last_id, call_ids)


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
