"""Following a run's event log live across processes with LISTEN/NOTIFY.

``append_events`` sends ``pg_notify('awaken_events', '<schema>:<digest of run id>')``
in its transaction, so the notification is delivered at COMMIT, after the
rows are visible. A tailer LISTENs on its own connection *before* it reads
the log, so no append can fall between its read and its wait; the payload
is a fixed-size digest because NOTIFY payloads are limited to 8000 bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING

import psycopg

from awaken_runtime.stores import StreamEvent

from ._errors import translate

if TYPE_CHECKING:
    from ._pool import Database

__all__ = ["CHANNEL", "notify_key", "tail"]

CHANNEL = "awaken_events"
"""The NOTIFY channel every store's event appends are announced on."""

_PAGE = 1000


def notify_key(db: Database, run_id: str) -> str:
    """The payload announcing an append to ``run_id``'s log in ``db``'s schema."""
    return db.schema + ":" + hashlib.blake2b(run_id.encode(), digest_size=12).hexdigest()


async def tail(
    db: Database,
    read: Callable[[str, int, int], Awaitable[list[StreamEvent]]],
    run_id: str,
    after: int,
    until_finish: bool,
    idle: float,
    repair: Callable[[str], Awaitable[bool]] | None = None,
) -> AsyncIterator[StreamEvent]:
    """Yield the events of ``run_id`` after ``after``, then each new one as it is committed.

    After ``idle`` seconds without an append, ``repair(run_id)`` finishes the log of a
    run that stopped while its log did not (``finish_event_log``): a follower of a run
    whose writer died between its end record and its ``RunFinish`` still gets the finish.
    """
    await db.open()
    key = notify_key(db, run_id)
    try:
        listener = await psycopg.AsyncConnection.connect(db.dsn, autocommit=True)
    except psycopg.Error as exc:
        raise translate(db.where, f"listen for events of run {run_id!r} on", exc) from exc
    try:
        await listener.execute(f"LISTEN {CHANNEL}")
        cursor = after
        while True:
            page = await read(run_id, cursor, _PAGE)
            for event in page:
                yield event
                cursor = event.seq
                if until_finish and event.data.get("type") == "run_finish":
                    return
            if len(page) == _PAGE:
                continue  # more is already stored
            # Wait for an append to this run (or re-read after `idle` as a safety net).
            # aclosing: a generator left open by `break` would keep the connection's lock.
            woken = False
            async with aclosing(listener.notifies(timeout=idle)) as notes:
                async for note in notes:
                    if note.payload == key:
                        woken = True
                        break
            if not woken and repair is not None:
                await repair(run_id)  # nothing appended for a while: a log left unfinished?
    except psycopg.Error as exc:
        raise translate(db.where, f"follow events of run {run_id!r} in", exc) from exc
    finally:
        await listener.close()
