"""Loading a thread's messages from SQLite at a cost proportional to what is new.

The first load of a thread decodes every row with one validation call. The
decoded messages are kept (for a bounded number of threads) and a later load
reads and decodes only the rows appended since, after checking that nothing
else happened to the kept ones: the thread's edit count (bumped by triggers
on any update, delete or replace of a message row, see ``_sqlite_schema.py``)
is unchanged, and the first and last kept rows still hold the kept messages'
ids (a database restored from a copy or re-created elsewhere). Otherwise the
whole thread is decoded again, so a damaged row is still ``StoreCorrupt``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from ..messages._message import Message
from ..state._engine import Scope, StoreKey
from ..suspension._suspension import ParkedRun
from ._errors import StoreCorrupt
from ._gc import no_gc
from ._kept import KeptThread, KeptThreads
from ._sqlite_ops import load_scope
from ._sqlite_rows import decode_one, decode_rows
from ._thread_store import RunRecord, ScopeBinding, ThreadSnapshot

__all__ = ["MESSAGES", "MessageCache", "load_thread"]

MESSAGES = TypeAdapter(list[Message])


class MessageCache(KeptThreads):
    """Decoded messages of recently loaded threads, checked against the database."""

    def load(
        self, cur: sqlite3.Cursor, path: str, tid: str
    ) -> tuple[list[Message], frozenset[str]]:
        """Every message of ``tid`` in order and their tool-call ids (inside the load's
        transaction)."""
        with no_gc():
            return self._load(cur, path, tid)

    def _load(
        self, cur: sqlite3.Cursor, path: str, tid: str
    ) -> tuple[list[Message], frozenset[str]]:
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
            new = decode_rows(path, what, MESSAGES, Message, bodies, first=kept.last + 1)
            kept = kept.extended(new, edits, rows[-1][0] if rows else kept.last)
        else:
            rows = cur.execute(
                "SELECT body FROM messages WHERE thread_id=? ORDER BY seq", (tid,)
            ).fetchall()
            messages = decode_rows(path, what, MESSAGES, Message, [b for (b,) in rows])
            if not messages:
                return [], frozenset()
            first, last = cur.execute(
                "SELECT min(seq), max(seq) FROM messages WHERE thread_id=?", (tid,)
            ).fetchone()
            kept = KeptThread.read(messages, edits, first, last)
        self.keep(tid, kept)
        return list(kept.messages), kept.call_ids

    @staticmethod
    def _unchanged(cur: sqlite3.Cursor, tid: str, kept: KeptThread, edits: int) -> bool:
        if edits != kept.edits:
            return False
        sql = "SELECT msg_id FROM messages WHERE thread_id=? AND seq=?"
        for seq, message in ((kept.first, kept.messages[0]), (kept.last, kept.messages[-1])):
            row = cur.execute(sql, (tid, seq)).fetchone()
            if row is None or row[0] != message.id:
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
