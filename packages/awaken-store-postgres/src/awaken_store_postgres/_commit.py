"""One thread commit as SQL: version check first, then only the new rows (O(new data)).

The thread row is updated with ``WHERE version = expected`` before anything
else, so it is both the optimistic check and the row lock that serializes
writers of one thread: a second writer at the same version blocks on the
row, then finds the version moved and gets ``VersionConflict``. Everything
runs in the caller's transaction; any error rolls all of it back.

The connection is in pipeline mode: the checks (version, stored run record,
earlier tool calls) go out in one round trip, the writes and COMMIT in a
second. No write needs the result of another, so nothing waits in between.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from awaken_runtime import (
    CommittedBatch,
    LeaseFenced,
    Message,
    ParkedRun,
    RunRecord,
    ScopeBinding,
    VersionConflict,
)
from awaken_runtime.stores import Lease, UnmatchedToolResult, decode_stored_row

from ._rules import kept_batches, merged_run, unresolved_calls
from ._state_sql import Conn, apply_command

__all__ = ["commit_thread", "duplicate_id", "stored_run"]

_ADVANCE = (
    "UPDATE threads SET version=version+1, n_messages=n_messages+%(nm)s, "
    "n_batches=n_batches+%(nb)s, parked=%(parked)s, latest_run=coalesce(%(run)s, latest_run), "
    "updated_at=%(at)s WHERE thread_id=%(t)s AND version=%(v)s "
    "RETURNING n_messages-%(nm)s, n_batches-%(nb)s"
)
_CREATE = (
    "INSERT INTO threads VALUES (%(t)s, 1, %(nm)s, %(nb)s, %(parked)s, %(run)s, %(at)s) "
    "ON CONFLICT (thread_id) DO NOTHING RETURNING 0, 0"
)
_MESSAGES = (
    "INSERT INTO messages (thread_id, seq, msg_id, body) "
    "SELECT %s, %s + n, i, b FROM unnest(%b::text[], %b::text[]) WITH ORDINALITY AS m(i, b, n)"
)
_CALLS = "INSERT INTO tool_calls SELECT %s, unnest(%b::text[]) ON CONFLICT DO NOTHING"
_BATCHES = (
    "INSERT INTO batches (thread_id, seq, body) "
    "SELECT %s, %s + n, b FROM unnest(%b::text[]) WITH ORDINALITY AS x(b, n)"
)
_HELD = "SELECT 1 FROM leases WHERE thread_id=%s AND token=%s FOR SHARE"
_GET_RUN = "SELECT body FROM runs WHERE run_id=%s"
_KNOWN_CALLS = "SELECT call_id FROM tool_calls WHERE thread_id=%s AND call_id = ANY(%s)"
_RUN = (
    "INSERT INTO runs (run_id, thread_id, phase, body, updated_at) VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT (run_id) DO UPDATE SET phase=excluded.phase, body=excluded.body, "
    "updated_at=excluded.updated_at"
)


async def stored_run(conn: Conn, where: str, run_id: str) -> RunRecord | None:
    """The stored record of ``run_id``; ``StoreCorrupt`` (for ``where``) if it is damaged."""
    cur = await conn.execute(_GET_RUN, (run_id,))
    row = await cur.fetchone()
    if row is None:
        return None
    return decode_stored_row(where, f"run {run_id!r} record", RunRecord, row[0])


async def commit_thread(
    conn: Conn,
    where: str,
    binding: ScopeBinding,
    expected_version: int,
    messages: Sequence[Message],
    batches: Sequence[CommittedBatch],
    run_record: RunRecord | None,
    parked: ParkedRun | None,
    lease: Lease | None = None,
) -> int:
    """Check and write one commit inside the caller's (pipelined) transaction.

    Returns the new version. A message id the thread already has makes the
    insert fail with a unique violation (``messages_by_id``), which the
    caller turns into ``DuplicateMessageId``. A damaged stored record of the
    run is ``StoreCorrupt`` (``where`` names the database), raised before any
    write, so the caller's transaction rolls back with nothing written.
    """
    tid = binding.thread_id
    earlier_calls = unresolved_calls(tid, messages)
    kept = kept_batches(batches)
    args = {
        "t": tid,
        "v": expected_version,
        "nm": len(messages),
        "nb": len(kept),
        "parked": parked.model_dump_json() if parked is not None else None,
        "run": run_record.run_id if run_record is not None else None,
        "at": time.time(),
    }
    # Round trip 1: the version check (and row lock) with the reads the checks need.
    advanced = await conn.execute(_CREATE if expected_version == 0 else _ADVANCE, args)
    # The fence, after the thread row (the lock order of every writer): the lease row is
    # share-locked, so a new holder's acquire waits for this commit, or ran before it.
    fence = await conn.execute(_HELD, (tid, lease.token)) if lease is not None else None
    known = None
    if earlier_calls:
        known = await conn.execute(_KNOWN_CALLS, (tid, earlier_calls))
    old_run = await conn.execute(_GET_RUN, (run_record.run_id,)) if run_record else None
    row = await advanced.fetchone()
    if row is None:
        cur = await conn.execute("SELECT version FROM threads WHERE thread_id=%s", (tid,))
        found = await cur.fetchone()
        raise VersionConflict(tid, expected_version, int(found[0]) if found else 0)
    if fence is not None and lease is not None and await fence.fetchone() is None:
        raise LeaseFenced(tid, expected_version, lease.holder)
    n_messages, n_batches = int(row[0]), int(row[1])
    if known is not None:
        have = {r[0] for r in await known.fetchall()}
        for cid in earlier_calls:
            if cid not in have:
                raise UnmatchedToolResult(tid, cid)
    record = None
    if run_record is not None and old_run is not None:
        stored = await old_run.fetchone()
        before = None
        if stored is not None:
            what = f"run {run_record.run_id!r} record"
            before = decode_stored_row(where, what, RunRecord, stored[0])
        record = merged_run(tid, before, run_record)
    # Round trip 2 (with the caller's COMMIT): the writes.
    if messages:
        ids = [m.id for m in messages]
        bodies = [m.model_dump_json() for m in messages]
        await conn.execute(_MESSAGES, (tid, n_messages, ids, bodies))
        calls = [c.id for m in messages for c in m.tool_calls or ()]
        if calls:
            await conn.execute(_CALLS, (tid, calls))
    if kept:
        await conn.execute(_BATCHES, (tid, n_batches, [b.model_dump_json() for b in kept]))
        for item in kept:
            for _producer, command in item.entries:
                await apply_command(conn, command.scope, binding.owner(command.scope), command)
    if record is not None:
        await conn.execute(
            _RUN,
            (
                record.run_id,
                tid,
                record.phase.value,
                record.model_dump_json(),
                record.updated_at.timestamp(),
            ),
        )
    return expected_version + 1


async def duplicate_id(conn: Conn, thread_id: str, messages: Sequence[Message]) -> str | None:
    """The first of ``messages``' ids the thread already has (after a unique violation)."""
    ids = [m.id for m in messages]
    cur = await conn.execute(
        "SELECT msg_id FROM messages WHERE thread_id=%s AND msg_id = ANY(%s)", (thread_id, ids)
    )
    taken = {r[0] for r in await cur.fetchall()}
    return next((i for i in ids if i in taken), None)
