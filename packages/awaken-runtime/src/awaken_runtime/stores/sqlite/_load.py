"""Loading a thread's messages from SQLite at a cost proportional to what a run reads.

The first load of a thread reads its rows (the older ones as a few chunk rows,
``_chunks.py``) and leaves them undecoded
(``StoredMessages``): a row becomes a validated message when something first
reads it, so a run that sends only a recent window (a context policy, a
compaction summary) decodes only that. The tool-call ids come from the
``tool_calls`` table. The messages are kept (for a bounded number of threads)
and a later load reads and decodes only the rows appended since, after
checking that nothing else happened to the kept ones: the thread's edit count
(bumped by triggers on any update, delete or replace of a message row, see
``_schema.py``) is unchanged, and the first and last kept rows still
hold the kept messages' ids (a database restored from a copy or re-created
elsewhere). Otherwise the whole thread is read again. A damaged row is
``StoreCorrupt`` naming the thread and row, raised where it is first read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from ...messages._stored import StoredMessages
from ...state._engine import Scope, StoreKey
from ...suspension._suspension import ParkedRun
from .._errors import StoreCorrupt
from .._kept import KeptThread, KeptThreads
from .._rows import decode_message_rows, decode_one, lazy_message_rows, no_gc
from .._thread_store import RunRecord, ScopeBinding, ThreadSnapshot
from ._chunks import read_bodies
from ._state import load_scope

__all__ = ["MessageCache", "load_thread"]

_FIRST = itemgetter(0)


class MessageCache(KeptThreads):
    """Messages of recently loaded threads, checked against the database."""

    def load(
        self, cur: sqlite3.Cursor, path: str, tid: str
    ) -> tuple[StoredMessages, frozenset[str]]:
        """Every message of ``tid`` in order and their tool-call ids (inside the load's
        transaction)."""
        with no_gc():
            kept = self._load(cur, path, tid)
        if kept is None:
            return StoredMessages(), frozenset()
        return kept.messages.copy(), kept.call_ids

    def _load(self, cur: sqlite3.Cursor, path: str, tid: str) -> KeptThread | None:
        row = cur.execute("SELECT n FROM message_edits WHERE thread_id=?", (tid,)).fetchone()
        edits = row[0] if row is not None else 0
        kept = self.forget(tid)
        what = f"thread {tid!r} message"
        if kept is not None and self._unchanged(cur, tid, kept, edits):
            rows = cur.execute(
                "SELECT seq, body FROM messages WHERE thread_id=? AND seq>? ORDER BY seq",
                (tid, kept.last),
            ).fetchall()
            bodies = [body for _seq, body in rows]
            new = decode_message_rows(path, what, bodies, kept.last + 1)
            kept = kept.extended(new, edits, rows[-1][0] if rows else kept.last)
        else:
            bodies = read_bodies(cur, tid)
            if not bodies:
                return None
            ends = cur.execute(
                "SELECT seq, msg_id FROM (SELECT seq, msg_id FROM messages WHERE thread_id=?1 "
                "ORDER BY seq LIMIT 1) UNION ALL SELECT seq, msg_id FROM (SELECT seq, msg_id "
                "FROM messages WHERE thread_id=?1 ORDER BY seq DESC LIMIT 1)",
                (tid,),
            ).fetchall()
            (first, first_id), (last, last_id) = ends
            calls = cur.execute("SELECT call_id FROM tool_calls WHERE thread_id=?", (tid,))
            messages = lazy_message_rows(path, what, bodies)
            call_ids = frozenset(map(_FIRST, calls))
            kept = KeptThread(messages, edits, first, last, first_id, last_id, call_ids)
        self.keep(tid, kept)
        return kept

    @staticmethod
    def _unchanged(cur: sqlite3.Cursor, tid: str, kept: KeptThread, edits: int) -> bool:
        if edits != kept.edits:
            return False
        sql = "SELECT msg_id FROM messages WHERE thread_id=? AND seq=?"
        for seq, message_id in ((kept.first, kept.first_id), (kept.last, kept.last_id)):
            row = cur.execute(sql, (tid, seq)).fetchone()
            if row is None or row[0] != message_id:
                return False
        return True


def load_thread(
    cur: sqlite3.Cursor,
    path: str,
    cache: MessageCache,
    binding: ScopeBinding,
    run_of: Callable[[sqlite3.Cursor, str], RunRecord | None],
) -> ThreadSnapshot:
    """The thread plus its profile and shared state (inside a read transaction)."""
    tid = binding.thread_id
    row = cur.execute(
        "SELECT version, parked, latest_run FROM threads WHERE thread_id=?", (tid,)
    ).fetchone()
    messages, call_ids = cache.load(cur, path, tid)
    state: dict[StoreKey, Any] = {}
    for scope, owner in (
        (Scope.THREAD, tid),
        (Scope.PROFILE, binding.profile_id),
        (Scope.SHARED, binding.namespace),
    ):
        try:
            load_scope(cur, scope, owner, state)
        except ValueError as exc:
            raise StoreCorrupt(
                path, f"a {scope.value} state row of {owner!r} is not JSON ({exc})"
            ) from None
    if row is None:
        return ThreadSnapshot(tid, messages, state, 0, call_ids=call_ids)
    latest = run_of(cur, row[2]) if row[2] is not None else None
    parked = decode_one(path, f"thread {tid!r} parked run", ParkedRun, row[1]) if row[1] else None
    return ThreadSnapshot(tid, messages, state, row[0], parked, latest, call_ids)
