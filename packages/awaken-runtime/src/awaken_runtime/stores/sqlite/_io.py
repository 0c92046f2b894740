"""The SQLite store's connection thread: transactions off the event loop, group commits.

Every operation of an :class:`~._store.SQLiteStore` is a function of a
cursor, run by the store's :class:`~.._worker.StoreWorker` thread. The
operations that queued up together (concurrent runs: their leases, loads and
commits) share one transaction, in order, each write inside a savepoint: a
commit that fails (a version conflict, a duplicate message id, a busy
thread's lease) rolls back only its savepoint, and the one ``COMMIT`` makes
them durable together or not at all; nobody hears an outcome before it. If
the shared transaction itself fails (disk full, a busy database), each
operation is run again alone, so every caller gets the outcome it would
have had on its own.

A store dropped without ``close()`` closes its connection when it is freed:
CPython's ``sqlite3.Connection`` is in a reference cycle with its own statement
cache, so left to itself it would stay open (its file, its write-ahead log)
until the cyclic collector's next full pass.
"""

from __future__ import annotations

import contextlib
import sqlite3
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .._worker import Job, StoreWorker
from ._schema import guarded

__all__ = ["SQLiteIO"]

T = TypeVar("T")


class SQLiteIO:
    """One connection and the thread that uses it."""

    def __init__(self, path: str, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn
        self.worker = StoreWorker(f"awaken-sqlite:{path}", self._run_batch)
        # Not at exit: a daemon thread may still be using the connection then.
        weakref.finalize(self, conn.close).atexit = False

    async def read(self, action: str, fn: Callable[[sqlite3.Cursor], T]) -> T:
        """``fn(cursor)`` in a read transaction."""
        return await self.worker.run("read", action, fn)

    async def write(self, action: str, fn: Callable[[sqlite3.Cursor], T]) -> T:
        """``fn(cursor)`` in its own write transaction."""
        return await self.worker.run("write", action, fn)

    async def commit(self, action: str, fn: Callable[[sqlite3.Cursor], T]) -> T:
        """``fn(cursor)`` in a write transaction it may share with other commits."""
        return await self.worker.run("commit", action, fn)

    async def close(self) -> None:
        """Close the connection after every queued operation."""
        await self.worker.run("raw", "close", self.conn.close)
        self.worker.close()

    # -- on the thread ------------------------------------------------------------------

    def _run_batch(self, jobs: Sequence[Job]) -> None:
        i = 0
        while i < len(jobs):
            j = i + 1
            if jobs[i].kind != "raw":
                while j < len(jobs) and jobs[j].kind != "raw":
                    j += 1
            if j - i > 1:
                self._group(jobs[i:j])
            else:
                self._alone(jobs[i])
            i = j

    def _alone(self, job: Job) -> None:
        if job.kind == "raw":
            try:
                job.finish(job.fn())
            except Exception as exc:
                job.finish(error=exc)
            return
        try:
            with guarded(self.path, job.action):
                cur = self.conn.cursor()
                cur.execute("BEGIN" if job.kind == "read" else "BEGIN IMMEDIATE")
                try:
                    result = job.fn(cur)
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
        except Exception as exc:
            job.finish(error=exc)
            return
        job.finish(result)

    def _group(self, jobs: Sequence[Job]) -> None:
        outcomes: list[tuple[Any, BaseException | None]] = []
        cur = self.conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            for job in jobs:
                if job.kind == "read":  # nothing to roll back if it fails
                    try:
                        outcomes.append((job.fn(cur), None))
                    except sqlite3.Error:
                        raise
                    except Exception as exc:
                        outcomes.append((None, exc))
                    continue
                cur.execute("SAVEPOINT c")
                try:
                    result = job.fn(cur)
                except sqlite3.Error:
                    raise  # the connection's trouble, not this operation's: retry alone
                except Exception as exc:
                    cur.execute("ROLLBACK TO c")
                    cur.execute("RELEASE c")
                    outcomes.append((None, exc))
                    continue
                cur.execute("RELEASE c")
                outcomes.append((result, None))
            cur.execute("COMMIT")
        except sqlite3.Error:
            self._rollback(cur)
            for job in jobs:
                self._alone(job)
            return
        except BaseException:
            self._rollback(cur)
            raise
        for job, (result, error) in zip(jobs, outcomes, strict=True):
            job.finish(result, error)

    def _rollback(self, cur: sqlite3.Cursor) -> None:
        if self.conn.in_transaction:
            # A failed rollback means the connection is gone; the next transaction reports it.
            with contextlib.suppress(sqlite3.Error):
                cur.execute("ROLLBACK")
