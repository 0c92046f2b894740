"""One thread commit of the file store: its global line (if any) and its thread line.

The thread line is the commit point. A commit with profile or shared state
writes completes the fsync round in progress, then appends and fsyncs its
global line and its thread line itself. Any other commit appends its thread
line (and, for a run's first commit, the run's index line) and leaves the
fsync to the round (see ``_io.py``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from ...messages._message import Message
from ...state._engine import CommittedBatch, Scope
from ...suspension._suspension import ParkedRun
from .._thread_store import RunRecord, ScopeBinding
from ._io import FsyncRound
from ._lines import frame
from ._mirror import FileMirror

__all__ = ["commit_lines"]


def _json(model: Any) -> str:
    return "null" if model is None else str(model.model_dump_json())


def commit_lines(
    files: FileMirror,
    round_: FsyncRound,
    binding: ScopeBinding,
    expected_version: int,
    messages: Sequence[Message],
    batches: Sequence[CommittedBatch],
    run_record: RunRecord | None,
    parked: ParkedRun | None,
) -> tuple[int, str | None]:
    """Append a commit's lines (under the lock); ``(version, thread id if the fsync is
    left to the round)``."""
    tid = binding.thread_id
    core = files.core
    files.sync_thread(tid)
    prep = core.prepare_commit(binding, expected_version, messages, batches, run_record)
    cid, at = os.urandom(8).hex(), time.time()
    scoped = [
        (c.scope, binding.owner(c.scope), c)
        for b in prep.batches
        for _p, c in b.entries
        if c.scope is not Scope.THREAD
    ]
    run_id = prep.record.run_id if prep.record is not None else None
    new_run = run_id is not None and run_id not in files.run_index
    undo = None
    alone = bool(scoped)  # state in the global log: the thread lines before it go first
    if alone:
        round_.flush()
    if scoped or new_run:
        ops = [[s.value, o, c.model_dump(mode="json")] for s, o, c in scoped]
        entry = {"c": cid, "t": tid, "ops": ops, "run": run_id if new_run else None}
        undo = files.append(files.global_path, json.dumps(entry) + "\n", sync=alone)
        round_.global_log = round_.global_log or not alone
    head = (
        f'{{"c":"{cid}","v":{expected_version + 1},"at":{at!r},"b":['
        + ",".join(b.model_dump_json() for b in prep.batches)
        + f'],"r":{_json(prep.record)},"p":{_json(parked)}}}'
    )
    line = frame(head, messages) + b"\n"
    try:
        old = files.append(files.thread_path(tid), line, sync=alone)
    except BaseException:
        if undo is not None:
            files.undo_global(undo)
        raise
    if not alone:
        round_.appended(tid, old)
    version = core.apply_commit(binding, messages, prep, parked, at, scoped=False)
    files.commits.setdefault(tid, set()).add(cid)
    for scope, owner, command in scoped:
        core.apply_scoped(scope, owner, [command])
    if run_id is not None and new_run:
        files.run_index[run_id] = tid
    return version, None if alone else tid
