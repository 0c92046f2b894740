"""One thread commit as SQL: version check first, then only the new rows (O(new data)).

The thread row is updated with ``WHERE version = expected`` before anything
else, so it is both the optimistic check and the row lock that serializes
writers of one thread: a second writer at the same version blocks on the
row, then finds the version moved and gets ``VersionConflict``. Everything
runs in the caller's transaction; any error rolls all of it back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from awaken_runtime import (
    CommittedBatch,
    Message,
    ParkedRun,
    RunRecord,
    ScopeBinding,
    VersionConflict,
)
from awaken_runtime.stores import DuplicateMessageId, UnmatchedToolResult

from ._rules import kept_batches, merged_run, unresolved_calls
from ._state_sql import Conn, apply_command

__all__ = ["commit_thread", "stored_run"]

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
    "SELECT %s, %s + n, i, b FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS m(i, b, n) "
    "ON CONFLICT (thread_id, msg_id) DO NOTHING"
)
_CALLS = "INSERT INTO tool_calls SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING"
_BATCHES = (
    "INSERT INTO batches (thread_id, seq, body) "
    "SELECT %s, %s + n, b FROM unnest(%s::text[]) WITH ORDINALITY AS x(b, n)"
)
_RUN = (
    "INSERT INTO runs (run_id, thread_id, phase, body, updated_at) VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT (run_id) DO UPDATE SET phase=excluded.phase, body=excluded.body, "
    "updated_at=excluded.updated_at"
)


async def stored_run(conn: Conn, run_id: str) -> RunRecord | None:
    """The stored record of ``run_id``."""
    cur = await conn.execute("SELECT body FROM runs WHERE run_id=%s", (run_id,))
    row = await cur.fetchone()
    return RunRecord.model_validate_json(row[0]) if row is not None else None


async def commit_thread(
    conn: Conn,
    binding: ScopeBinding,
    expected_version: int,
    messages: Sequence[Message],
    batches: Sequence[CommittedBatch],
    run_record: RunRecord | None,
    parked: ParkedRun | None,
) -> int:
    """Apply one commit inside the caller's transaction; returns the new version."""
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
    cur = await conn.execute(_CREATE if expected_version == 0 else _ADVANCE, args)
    row = await cur.fetchone()
    if row is None:
        cur = await conn.execute("SELECT version FROM threads WHERE thread_id=%s", (tid,))
        found = await cur.fetchone()
        raise VersionConflict(tid, expected_version, int(found[0]) if found else 0)
    n_messages, n_batches = int(row[0]), int(row[1])
    if messages:
        await _insert_messages(conn, tid, n_messages, messages, earlier_calls)
    if kept:
        bodies = [b.model_dump_json() for b in kept]
        await conn.execute(_BATCHES, (tid, n_batches, bodies))
        for item in kept:
            for _producer, command in item.entries:
                await apply_command(conn, command.scope, binding.owner(command.scope), command)
    if run_record is not None:
        record = merged_run(tid, await stored_run(conn, run_record.run_id), run_record)
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


async def _insert_messages(
    conn: Conn, tid: str, base: int, messages: Sequence[Message], earlier_calls: list[str]
) -> None:
    if earlier_calls:
        cur = await conn.execute(
            "SELECT call_id FROM tool_calls WHERE thread_id=%s AND call_id = ANY(%s)",
            (tid, earlier_calls),
        )
        known = {r[0] for r in await cur.fetchall()}
        for cid in earlier_calls:
            if cid not in known:
                raise UnmatchedToolResult(tid, cid)
    ids = [m.id for m in messages]
    cur = await conn.execute(_MESSAGES, (tid, base, ids, [m.model_dump_json() for m in messages]))
    if cur.rowcount != len(messages):
        # ON CONFLICT skipped ids the thread already has: name the first one.
        cur = await conn.execute(
            "SELECT msg_id FROM messages WHERE thread_id=%s AND msg_id = ANY(%s) AND seq <= %s",
            (tid, ids, base),
        )
        taken = {r[0] for r in await cur.fetchall()}
        raise DuplicateMessageId(tid, next(i for i in ids if i in taken))
    calls = [c.id for m in messages for c in m.tool_calls or ()]
    if calls:
        await conn.execute(_CALLS, (tid, calls))
