"""Message chunks: a long thread's older message rows read back as a few long rows.

SQLite's cost to read a thread is mostly per row it steps over, not per byte, so
a first load of a 10,000-message thread spent most of its time stepping over
10,000 rows. Once ``CHUNK`` messages have been appended since the last chunk,
the commit that appends them also writes one ``message_chunks`` row: the bodies
of every message row in its seq range, joined by ``"\\n"`` (a row the store wrote
is compact JSON, which never holds a raw newline). A load reads the chunks in
order, then the rows after the last one.

The message rows stay the record (paging, ids, edits read them); a chunk is a
copy kept in the same transaction, so it costs each long thread's message
bodies once more on disk. It is never trusted past what the database can
vouch for:

* triggers (schema version 4 on, ``_schema.py``) delete a thread's chunk and
  every later one when a row in its range is updated, deleted or inserted over,
  so the chunks always cover a prefix of the thread exactly as its rows stand;
  the next commit past ``CHUNK`` new rows chunks the rest again;
* a chunk whose range does not follow the one before it, whose count does not
  fit its range, or whose body does not split into that count, ends the chunked
  part of the load there and the rest is read row by row;
* a range holding a row that cannot be joined (a hand-written body with a
  newline in it, or bytes) is chunked with no body, and loads read its rows.

A damaged body is still ``StoreCorrupt`` naming its row when first decoded. The
chunk rows are the store's own, as the edit counts of ``_load.py`` are: a
hand edit to ``message_chunks`` itself is only caught as far as the checks above
reach.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from operator import itemgetter

__all__ = ["CHUNK", "read_bodies", "seal"]

CHUNK = 256
"""Messages appended since the thread's last chunk that make the next chunk."""

_FIRST = itemgetter(0)


def seal(cur: sqlite3.Cursor, tid: str, last: int, new: Sequence[str]) -> None:
    """Chunk ``tid``'s unchunked rows if there are ``CHUNK`` or more (inside a commit).

    ``new`` are the bodies the commit just inserted, as seqs ``last - len(new) + 1``
    to ``last``; the rows before them are read from the table.
    """
    if last < CHUNK:  # a short thread: no chunk is due, whatever the table holds
        return
    # The chunks are a prefix in first_seq order, so the last one ends it (one index seek).
    row = cur.execute(
        "SELECT last_seq FROM message_chunks WHERE thread_id=? ORDER BY first_seq DESC LIMIT 1",
        (tid,),
    ).fetchone()
    done = max(row[0], 0) if row is not None else 0  # a hand-made row below seq 1 counts none
    if last - done < CHUNK:
        return
    before = last - len(new)
    older = cur.execute(
        "SELECT body FROM messages WHERE thread_id=? AND seq>? AND seq<=? ORDER BY seq",
        (tid, done, before),
    ).fetchall()
    bodies = list(map(_FIRST, older))
    bodies += new
    try:
        packed: str | None = "\n".join(bodies)
    except TypeError:  # a hand-written bytes body
        packed = None
    if packed is not None and packed.count("\n") != len(bodies) - 1:
        packed = None
    cur.execute(
        # OR REPLACE: a chunk row edited by hand must not make the commit fail.
        "INSERT OR REPLACE INTO message_chunks (thread_id, first_seq, last_seq, n, body) "
        "VALUES (?, ?, ?, ?, ?)",
        (tid, done + 1, last, len(bodies), packed),
    )


def read_bodies(cur: sqlite3.Cursor, tid: str) -> list[str]:
    """Every message body of ``tid`` in seq order (inside the load's transaction)."""
    chunks = cur.execute(
        "SELECT first_seq, last_seq, n, body FROM message_chunks WHERE thread_id=? "
        "ORDER BY first_seq",
        (tid,),
    ).fetchall()
    bodies: list[str] = []
    done = 0
    for first, last, n, packed in chunks:
        if first != done + 1 or not 0 < n <= last - first + 1:
            break
        if packed is None:
            part = _rows(cur, tid, done, last)
        elif isinstance(packed, str):
            part = packed.split("\n")
        else:
            break
        if len(part) != n:
            break
        bodies += part
        done = last
    bodies += _rows(cur, tid, done, None)
    return bodies


def _rows(cur: sqlite3.Cursor, tid: str, after: int, upto: int | None) -> list[str]:
    sql = "SELECT body FROM messages WHERE thread_id=? AND seq>?"
    args: tuple[object, ...] = (tid, after)
    if upto is not None:
        sql += " AND seq<=?"
        args += (upto,)
    return list(map(_FIRST, cur.execute(sql + " ORDER BY seq", args).fetchall()))
