"""The file store's I/O thread: operations off the event loop, commits fsynced in rounds.

Every operation of a :class:`~._store.FileStore` runs on the store's
:class:`~.._worker.StoreWorker` thread. The operations that queued up
together run under one hold of the lock. Consecutive thread commits that
write only their thread's file (the per-step checkpoint) append their lines
first and are fsynced together afterwards (:class:`FsyncRound`): one fsync
per file touched, all in flight at once, and no caller hears "committed"
before its line is durable. A first commit of a run also appends the run's
index line to the global log in the round: an index line whose thread line
never landed is harmless (the run is not found in its thread). A commit
with profile or shared state writes, and every other operation, first
completes the round in progress, so such a global line is never durable
before the thread lines that came before it.

If a round's fsync fails, that file is cut back to where the round began and
the thread is forgotten by the mirror (re-read from disk when next used), and
each commit of that file fails with ``StoreIOError``: nothing of it counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from .._errors import StoreError
from .._worker import Job, StoreWorker
from ._jsonl import fsync_file
from ._mirror import FileMirror

__all__ = ["FileIO", "FsyncRound"]

T = TypeVar("T")

_FSYNCS = 16
"""fsyncs in flight at once in one round."""


@dataclass(slots=True)
class FsyncRound:
    """Thread-file appends whose fsync is still due, and the commits waiting on it."""

    flusher: Callable[[FsyncRound], None]
    """Completes a round (the store's, which keeps no reference to it: a round holding
    a closure over itself would be a reference cycle per batch)."""
    starts: dict[str, int] = field(default_factory=dict)
    """Thread id -> size of its file before the round's first append."""
    global_log: bool = False
    """Whether a run-index line was appended to the global log in this round."""
    waiting: list[tuple[Job, str, Any]] = field(default_factory=list)
    """(job, thread id, result) of each commit in the round."""

    def flush(self) -> None:
        """Complete the round now (before writing the global log)."""
        self.flusher(self)

    def appended(self, tid: str, old_size: int) -> None:
        """A commit appended its line to ``tid``'s file at ``old_size``."""
        self.starts.setdefault(tid, old_size)


class FileIO:
    """The worker thread of one :class:`~._mirror.FileMirror`."""

    def __init__(self, files: FileMirror) -> None:
        self.files = files
        self.worker = StoreWorker(f"awaken-files:{files.dir}", self._run_batch)

    async def run(self, action: str, fn: Callable[[], T]) -> T:
        """``fn()`` under the store's lock, on the store's thread."""
        return await self.worker.run("op", action, fn)

    async def commit(self, action: str, fn: Callable[[FsyncRound], tuple[T, str | None]]) -> T:
        """A commit: ``fn(round)`` returns ``(result, thread id)`` when it left its fsync to
        the round (see the module doc), ``(result, None)`` when it fsynced itself."""
        # The worker hands back the result alone; the thread id stays with the round.
        return cast(T, await self.worker.run("commit", action, fn))

    def _run_batch(self, jobs: Sequence[Job]) -> None:
        files = self.files
        try:
            with files.locked():
                round_ = FsyncRound(self._flush)
                for job in jobs:
                    if job.kind != "commit":
                        self._flush(round_)
                        try:
                            job.finish(job.fn())
                        except Exception as exc:
                            job.finish(error=exc)
                        continue
                    try:
                        result, deferred = job.fn(round_)
                    except Exception as exc:
                        job.finish(error=exc)
                        continue
                    if deferred is None:
                        job.finish(result)
                    else:
                        round_.waiting.append((job, deferred, result))
                self._flush(round_)
        except StoreError as exc:  # the lock or the global log failed: every job did
            for job in jobs:
                if not job.done:
                    job.finish(error=exc)

    def _flush(self, round_: FsyncRound) -> None:
        if not round_.waiting and not round_.starts:
            return
        files = self.files
        paths = [files.thread_path(tid) for tid in round_.starts]
        if round_.global_log:
            paths.append(files.global_path)
        errors = _fsync_all(paths)
        failed: dict[str, StoreError] = {}
        global_error = errors.get(files.global_path)
        for tid, start in round_.starts.items():
            error = errors.get(files.thread_path(tid)) or global_error
            if error is None:
                continue
            failed[tid] = error
            try:
                files.undo_thread(tid, start)
            except StoreError:
                files.forget(tid)  # the next reader cuts what it cannot replay
        for job, tid, result in round_.waiting:
            error = failed.get(tid)
            job.finish(result if error is None else None, error)
        round_.starts.clear()
        round_.waiting.clear()
        round_.global_log = False


_POOL: ThreadPoolExecutor | None = None


def _fsync_all(paths: list[Path]) -> dict[Path, StoreError]:
    """fsync every file, at once (the file system joins concurrent flushes); the failures."""
    global _POOL
    errors: dict[Path, StoreError] = {}

    def one(path: Path) -> None:
        try:
            fsync_file(path)
        except StoreError as exc:
            errors[path] = exc

    if len(paths) == 1:
        one(paths[0])
        return errors
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_FSYNCS, thread_name_prefix="awaken-fsync")
    list(_POOL.map(one, paths))
    return errors
