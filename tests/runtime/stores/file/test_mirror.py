"""Issue 16, item 7: the file store's in-memory mirror is bounded.

A long-lived process that touches many threads keeps at most
``max_cached_threads`` of them in memory between operations; an evicted
thread is read back from its file, with nothing lost and nothing re-applied
twice.
"""

from __future__ import annotations

import gc
import pathlib
import tracemalloc
from pathlib import Path

import pytest

from awaken_runtime import Command, Message, Scope
from awaken_runtime.stores import FileStore
from awaken_store_conformance import batch, binding, run_record


async def _touch(store: FileStore, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        b = binding(f"t{i}")
        snap = await store.load(b)
        await store.commit(
            b,
            snap.version,
            [Message.user(f"hello {i} " + "x" * 200)],
            [batch(Command.set("n", i))],
            run_record=run_record(f"r{i}", f"t{i}"),
        )


async def test_the_mirror_keeps_at_most_the_bound(tmp_path: Path) -> None:
    store = FileStore(tmp_path, max_cached_threads=20)
    await _touch(store, 300)
    files = store._files
    assert len(files.core.threads) <= 20
    assert len(files.commits) <= 20
    assert len(files.core.runs) <= 20
    assert len([p for p in files._tails if p.parent.name == "threads"]) <= 20


async def test_an_evicted_thread_reads_back_whole_and_keeps_committing(tmp_path: Path) -> None:
    store = FileStore(tmp_path, max_cached_threads=3)
    await _touch(store, 10)
    # t0 was evicted long ago: its data comes back from the file, exactly once.
    snap = await store.load(binding("t0"))
    assert [m.text for m in snap.messages] == ["hello 0 " + "x" * 200]
    assert snap.version == 1 and snap.state[(Scope.THREAD, "n")] == 0
    assert await store.commit(binding("t0"), 1, [Message.user("again")], []) == 2
    run = await store.get_run("r5")
    assert run is not None and run.thread_id == "t5"
    assert [r.run_id for r in await store.list_runs("t7")] == ["r7"]
    # Another process sees the same.
    other = FileStore(tmp_path, max_cached_threads=1)
    assert [m.text for m in (await other.load(binding("t0"))).messages][-1] == "again"
    assert len(await other.list_threads(limit=1000)) == 10
    assert len(other._files.core.threads) <= 1


async def test_memory_stays_flat_as_threads_grow(tmp_path: Path) -> None:
    store = FileStore(tmp_path, max_cached_threads=50)
    await _touch(store, 200)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        await _touch(store, 800, start=200)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # pathlib interns each new file name: when the interpreter's table of interned strings
    # resizes (one block, when depends on every test before) it is not the store's memory.
    skip = [tracemalloc.Filter(False, pathlib.__file__)]
    grown = sum(
        d.size_diff
        for d in after.filter_traces(skip).compare_to(before.filter_traces(skip), "filename")
    )
    # An unbounded mirror grows ~20 KB per thread here; what is left is the run index.
    assert grown < 800 * 2_000, grown


def test_the_bound_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_cached_threads"):
        FileStore(tmp_path, max_cached_threads=0)
