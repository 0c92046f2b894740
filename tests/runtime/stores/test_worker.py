"""A durable store's I/O thread does not keep an unclosed store alive.

A user who drops a store without ``close()`` gets it freed as soon as the last
reference goes (its SQLite connection with it), not at the cyclic collector's
next full pass, and the store's thread ends instead of idling on a store nobody
can reach. The collector is off in these tests, so only reference counting can
free anything.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Message
from awaken_runtime.stores import FileStore, SQLiteStore
from awaken_runtime.stores import _worker as worker_module
from awaken_runtime.stores._worker import Job, StoreWorker
from awaken_store_conformance import binding

KINDS = ["sqlite", "file"]


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _open(kind: str, tmp_path: Path) -> Any:
    return SQLiteStore(tmp_path / "a.db") if kind == "sqlite" else FileStore(tmp_path / "f")


async def _with_thread(kind: str, tmp_path: Path, *texts: str) -> Any:
    """A store holding thread ``t1`` with one user message per text."""
    store = _open(kind, tmp_path)
    await store.commit(binding("t1"), 0, tuple(Message.user(t) for t in texts), [])
    return store


async def _reopened_texts(kind: str, tmp_path: Path) -> list[str]:
    """Thread ``t1``'s texts as a new store object over the same files reads them."""
    again = _open(kind, tmp_path)
    try:
        return [m.text for m in (await again.load(binding("t1"))).messages]
    finally:
        await again.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_dropped_unclosed_store_is_freed_and_its_thread_ends(
    kind: str, tmp_path: Path, no_collector: None
) -> None:
    store = await _with_thread(kind, tmp_path, "hi")
    assert [m.text for m in (await store.load(binding("t1"))).messages] == ["hi"]
    worker: StoreWorker = store._io.worker
    thread = worker._thread
    assert thread is not None and thread.is_alive()  # the last job's thread idles
    freed = weakref.ref(store)
    io_freed = weakref.ref(store._io)
    wal = tmp_path / "a.db-wal"
    assert kind != "sqlite" or wal.exists()  # WAL mode: the file lives while a connection does

    del store

    assert freed() is None
    assert io_freed() is None
    # The last connection's close checkpoints the log and removes it: closed, not leaked.
    assert not wal.exists()
    assert worker._closed
    thread.join(timeout=30)  # the close wakes it (the idle timeout would end it later)
    assert not thread.is_alive()


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "grouped"])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_store_whose_commit_failed_is_freed_once_dropped(
    kind: str, grouped: bool, tmp_path: Path, no_collector: None
) -> None:
    """A failed operation's error leaves no cycle through the store's thread.

    The error's traceback holds the thread's frames (the batch, the job that holds the
    error, the cursor, the work that closes over the store): a version conflict, the
    everyday failure of two runs on one thread, must not pin the store and its
    connection until the collector's next full pass.
    """
    store = await _with_thread(kind, tmp_path, "one")
    release = _hold(store) if grouped else None
    commits = [
        asyncio.create_task(store.commit(binding("t1"), 1, (Message.user(text),), []))
        for text in ("two", "three")
    ]
    if release is not None:
        await asyncio.sleep(0.05)  # both commits are queued: one batch, one transaction
        release.set()
    outcomes = await asyncio.gather(*commits, return_exceptions=True)
    assert sorted(type(o).__name__ for o in outcomes) == ["VersionConflict", "int"]
    assert len(await _reopened_texts(kind, tmp_path)) == 2  # exactly one commit landed
    del commits, outcomes  # the caller lets the error go
    worker: StoreWorker = store._io.worker
    thread = worker._thread
    assert thread is not None
    freed = weakref.ref(store)

    del store

    assert freed() is None
    assert worker._closed
    thread.join(timeout=30)
    assert not thread.is_alive()


def _submit(store: Any, fn: Any, action: str) -> Job:
    """Queue ``fn`` on the store's thread directly, past the store's API: no caller awaits
    it through the store, only the test through the job's future."""
    kind = "raw" if isinstance(store, SQLiteStore) else "op"
    loop = asyncio.get_running_loop()
    job = Job(kind, fn, action, loop, loop.create_future())
    store._io.worker.submit(job)
    return job


def _hold(store: Any) -> threading.Event:
    """Keep the store's thread busy until the event is set, so the next jobs queue up."""
    release = threading.Event()
    _submit(store, release.wait, "hold the thread")
    return release


@pytest.mark.parametrize("kind", KINDS)
async def test_a_commit_queued_when_the_last_outside_reference_goes_still_lands(
    kind: str, tmp_path: Path, no_collector: None
) -> None:
    store = await _with_thread(kind, tmp_path, "one")
    release = _hold(store)
    commit = asyncio.create_task(store.commit(binding("t1"), 1, (Message.user("two"),), []))
    await asyncio.sleep(0.05)  # the commit is queued behind the held thread
    freed = weakref.ref(store)
    del store  # only the commit in flight holds the store now
    assert freed() is not None
    release.set()
    await commit
    assert freed() is None  # and once it has landed, nothing does
    assert await _reopened_texts(kind, tmp_path) == ["one", "two"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_job_nobody_owns_after_its_store_is_freed_fails_instead_of_hanging(
    kind: str, tmp_path: Path, no_collector: None
) -> None:
    store = await _with_thread(kind, tmp_path, "one")
    release = _hold(store)
    orphan = _submit(store, lambda: "ran", "orphan")  # nothing awaits it with the store
    assert orphan.future is not None
    outcome = orphan.future  # the job lets go of it once delivered
    freed = weakref.ref(store)
    del store
    release.set()
    with pytest.raises(RuntimeError, match="garbage-collected before it ran its jobs"):
        await asyncio.wait_for(outcome, 30)
    assert freed() is None
    with pytest.raises(RuntimeError, match="has finished"):
        orphan.fn()  # a finished job's work is gone: it cannot run twice


@pytest.mark.parametrize("kind", KINDS)
async def test_the_data_of_a_dropped_store_is_all_there_when_reopened(
    kind: str, tmp_path: Path, no_collector: None
) -> None:
    store = await _with_thread(kind, tmp_path, "one", "two")
    del store
    assert await _reopened_texts(kind, tmp_path) == ["one", "two"]


def test_a_worker_of_a_plain_function_keeps_it() -> None:
    """A ``run_batch`` that is not a bound method (nothing owns it) is held strongly."""
    seen: list[int] = []

    def run_batch(jobs: Sequence[Job]) -> None:
        for job in jobs:
            job.finish(job.fn())
            seen.append(job.result)

    worker = StoreWorker("plain", run_batch)
    del run_batch
    gc.collect()
    job = Job("op", lambda: 7, "compute")
    worker.submit(job)
    thread = worker._thread
    assert thread is not None
    worker.close()
    thread.join(timeout=30)
    assert seen == [7] and job.done and job.result == 7


async def test_the_idle_thread_keeps_no_result_its_caller_has_let_go(
    no_collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result lives as long as its caller holds it, not until the thread's next batch."""
    monkeypatch.setattr(worker_module, "_IDLE_EXIT", 60.0)  # the thread stays, idle

    class Rows:
        """Stands for a large result, e.g. a loaded thread's rows."""

    def run_batch(jobs: Sequence[Job]) -> None:
        for job in jobs:
            job.finish(job.fn())

    worker = StoreWorker("results", run_batch)
    rows = await worker.run("read", "load", Rows)
    thread = worker._thread
    assert thread is not None
    freed = weakref.ref(rows)
    del rows
    # The caller may resume before the thread has left its batch: wait for the thread,
    # which then idles without ending (it would hold the result for a minute otherwise).
    for _ in range(3000):
        if freed() is None:
            break
        await asyncio.sleep(0.01)
    assert freed() is None
    assert thread.is_alive()
    worker.close()
    thread.join(timeout=30)
