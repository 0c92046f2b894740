"""A store's I/O thread: blocking work off the event loop, handed over in batches.

A durable store submits each operation as a :class:`Job`; one thread per
store runs them in submission order. Whatever has queued up while the thread
was busy is handed to the store's ``run_batch`` together, so the store can
group commits of concurrent runs into one transaction (SQLite) or one round
of fsyncs (files). Results go back to each caller's event loop with one
wake-up per batch and loop, not one per job.

The thread starts on the first job and exits after a short idle time, so an
unclosed store holds no thread for long. The worker holds its store's
``run_batch`` weakly, a finished job drops its work (which closes over the
store) and a delivered one its outcome, and a failed job's traceback keeps none
of the thread's variables, so an unclosed store that nobody references is freed
at once (its connection or files closed) rather than at the cyclic collector's
next full pass, and its worker closes with it. That holds after a failed
operation too (a version conflict), once the caller has let the error go.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import traceback
import types
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Job", "StoreWorker"]

T = TypeVar("T")

_WORKERS: weakref.WeakSet[StoreWorker] = weakref.WeakSet()

_IDLE_EXIT = 2.0
"""Seconds without work after which the thread ends (the next job starts a new one)."""


def _spent(*args: Any) -> Any:
    raise RuntimeError("this job has finished; its work cannot run again")


@dataclass(slots=True)
class Job:
    """One operation: ``fn`` does the work; ``kind`` says how it may be grouped."""

    kind: str
    """``"commit"`` (may share a transaction or fsync round), ``"read"`` or ``"write"``."""
    fn: Callable[..., Any]
    action: str
    """What the job does, for error messages ("commit thread 't1' to")."""
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[Any] | None = None
    result: Any = None
    error: BaseException | None = None
    done: bool = field(default=False)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """Record the outcome (delivered to the caller when the batch ends).

        The work is dropped with it: ``fn`` usually closes over the store, and a
        finished job that a thread or a pending callback still holds must not keep
        the store alive after its caller has let it go.
        """
        self.result, self.error, self.done = result, error, True
        self.fn = _spent


def _deliver(jobs: list[Job]) -> None:
    for job in jobs:
        future, result, error = job.future, job.result, job.error
        # The caller's future has the outcome from here on. A job is still reachable from
        # the thread's finished frames, which an error's traceback keeps: holding the
        # error (or the future that holds it) would make them a cycle.
        job.future = job.result = job.error = None
        if future is None or future.done():
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


class StoreWorker:
    """One I/O thread per store; :meth:`run` awaits a job's outcome."""

    def __init__(self, name: str, run_batch: Callable[[Sequence[Job]], None]) -> None:
        self._name = name
        # A bound method of the store's I/O object, which holds this worker: held weakly,
        # so the pair is not a reference cycle, and the worker closes when its owner goes.
        if isinstance(run_batch, types.MethodType):
            self._run_batch: Callable[[], Callable[[Sequence[Job]], None] | None] = (
                weakref.WeakMethod(run_batch)
            )
            weakref.finalize(run_batch.__self__, self.close).atexit = False
        else:
            self._run_batch = lambda: run_batch
        self._queue: deque[Job] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        _WORKERS.add(self)

    def _after_fork(self) -> None:
        # A forked child has none of the parent's threads: the next job starts one.
        self._queue = deque()
        self._cond = threading.Condition()
        self._thread = None

    async def run(self, kind: str, action: str, fn: Callable[..., T]) -> T:
        """Run ``fn`` on the store's thread; its result, or what it raised.

        A cancelled caller still waits for its job to end before the
        cancellation goes on, so no operation of a run is in flight once the
        run has unwound (a commit it started has landed or failed).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.submit(Job(kind, fn, action, loop, future))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            while not future.done():
                try:
                    await asyncio.shield(future)
                except asyncio.CancelledError:
                    continue
                except Exception:
                    break
            raise
        finally:
            # What the job raised carries this frame in its traceback: holding the future
            # (which holds the error) here would make the pair a cycle.
            del future

    def submit(self, job: Job) -> None:
        """Queue ``job``; start the thread if none is running."""
        with self._cond:
            if self._closed:
                raise RuntimeError(f"{self._name} is closed")
            self._queue.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
                self._thread.start()
            else:
                self._cond.notify()

    def close(self) -> None:
        """Refuse new jobs; queued ones still run."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _main(self) -> None:
        cond, queue = self._cond, self._queue
        while True:
            with cond:
                if not queue:
                    cond.wait(_IDLE_EXIT)
                if not queue:
                    self._thread = None
                    return
                batch = list(queue)
                queue.clear()
            self._serve(batch)
            # The idle wait holds no finished job: their results are the callers' (a
            # loaded thread can be large), not this thread's until its next batch.
            del batch

    def _serve(self, batch: list[Job]) -> None:
        run_batch = self._run_batch()
        try:
            if run_batch is None:  # the store was freed with jobs queued (nobody awaits them)
                raise RuntimeError(f"{self._name} was garbage-collected before it ran its jobs")
            run_batch(batch)
        except BaseException as exc:  # a bug in run_batch: fail the batch, keep serving
            for job in batch:
                if not job.done:
                    job.finish(error=exc)
        # Dropped before the callers hear back: once they do, this thread holds nothing of
        # the store, so their last reference to it is the last one.
        del run_batch
        for job in batch:
            if job.error is not None:
                _release_frames(job.error)
        by_loop: dict[asyncio.AbstractEventLoop, list[Job]] = {}
        for job in batch:
            if job.loop is not None:
                by_loop.setdefault(job.loop, []).append(job)
        for loop, jobs in by_loop.items():
            # A RuntimeError: the caller's loop has closed, nobody is waiting.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_deliver, jobs)


def _release_frames(error: BaseException) -> None:
    """Clear the locals of this thread's finished frames in ``error``'s tracebacks.

    They hold the batch, the job that holds ``error`` (a cycle), the cursor and the
    work that closes over the store: left alone, a failed job would keep its store and
    connection until the cyclic collector's next pass. The traceback still shows where
    the error came from; only the frames' variables go.
    """
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        exc = pending.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        pending += (exc.__cause__, exc.__context__)


def _reset_after_fork() -> None:
    for worker in list(_WORKERS):
        worker._after_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_reset_after_fork)
