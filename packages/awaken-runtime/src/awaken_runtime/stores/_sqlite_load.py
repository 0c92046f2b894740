"""Loading a thread's messages from SQLite at a cost proportional to what is new.

The first load of a thread decodes every row with one validation call. The
decoded messages are kept (for a bounded number of threads), with a
fingerprint of the exact row text they came from. A later load still reads
every row, but it decodes only the rows past the kept ones, and only after
checking the kept rows' text is unchanged: a row damaged or replaced since
(by another process, a restore, a deleted and re-created thread) changes the
fingerprint, and the whole thread is decoded again, so a corrupt row is still
``StoreCorrupt``. Reading a row costs a fraction of validating it.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from ..messages._message import Message
from ..state._engine import Scope, StoreKey
from ..suspension._suspension import ParkedRun
from ._errors import StoreCorrupt
from ._gc import no_gc
from ._sqlite_ops import load_scope
from ._sqlite_rows import decode_one, decode_rows
from ._thread_store import RunRecord, ScopeBinding, ThreadSnapshot

__all__ = ["MESSAGES", "MessageCache", "load_thread"]

MESSAGES = TypeAdapter(list[Message])


@dataclass(slots=True)
class _Kept:
    messages: list[Message]
    length: int
    """Characters of the kept rows joined with commas."""
    fingerprint: int
    """``hash`` of that text (per process, never stored)."""


class MessageCache:
    """Decoded messages of recently loaded threads, checked against their rows."""

    def __init__(self, max_threads: int = 256, max_messages: int = 500_000) -> None:
        self.max_threads = max_threads
        self.max_messages = max_messages
        """Messages kept over all threads; the least recently loaded threads go first."""
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._count = 0

    def load(self, cur: sqlite3.Cursor, path: str, tid: str) -> list[Message]:
        """Every message of ``tid`` in order (run inside the load's transaction)."""
        with no_gc():
            return self._load(cur, path, tid)

    def _load(self, cur: sqlite3.Cursor, path: str, tid: str) -> list[Message]:
        rows = cur.execute(
            "SELECT body FROM messages WHERE thread_id=? ORDER BY seq", (tid,)
        ).fetchall()
        bodies = [body for (body,) in rows]
        kept = self._kept.pop(tid, None)
        if kept is not None:
            self._count -= len(kept.messages)
        start = 0
        if kept is not None and 0 < len(kept.messages) <= len(bodies):
            n = len(kept.messages)
            try:
                head = ",".join(bodies[:n])
            except TypeError:  # a row that is not text: decode all, to name it
                head = ""
            if len(head) == kept.length and hash(head) == kept.fingerprint:
                start = n
        what = f"thread {tid!r} message"
        new = decode_rows(path, what, MESSAGES, Message, bodies[start:], first=start + 1)
        messages = kept.messages + new if kept is not None and start else new
        if messages:
            joined = ",".join(bodies)
            self._keep(tid, _Kept(messages, len(joined), hash(joined)))
        return list(messages)

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
    messages = cache.load(cur, path, tid)
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
        return ThreadSnapshot(tid, messages, state, 0)
    latest = run_of(cur, row[2]) if row[2] is not None else None
    parked = decode_one(path, f"thread {tid!r} parked run", ParkedRun, row[1]) if row[1] else None
    return ThreadSnapshot(tid, messages, state, row[0], parked, latest)
