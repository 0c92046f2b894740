"""Issue 19, item 3: durable stores off the event loop, commits of concurrent runs grouped.

Commits that queue up together share one SQLite transaction (a savepoint
each) or one round of fsyncs (file store). Each commit still gets its own
outcome: a version conflict or a duplicate message id among a group fails
only that commit, nothing of it is written, and the others land. A process
killed in the middle of a group leaves no commit half written.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Command, Message, Scope, VersionConflict
from awaken_runtime.stores import DuplicateMessageId, FileStore, SQLiteStore
from awaken_runtime.stores._worker import Job
from awaken_store_conformance import batch, binding

KINDS = ["sqlite", "file"]


def _open(kind: str, tmp_path: Path) -> Any:
    return SQLiteStore(tmp_path / "a.db") if kind == "sqlite" else FileStore(tmp_path / "f")


def _hold(store: Any) -> threading.Event:
    """Keep the store's thread busy until the event is set, so the next jobs queue up."""
    release = threading.Event()
    store._io.worker.submit(
        Job("raw" if isinstance(store, SQLiteStore) else "op", release.wait, "")
    )
    return release


def _record_groups(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every group of commits the store handled together."""
    sizes: list[int] = []
    if isinstance(store, SQLiteStore):
        group = store._io._group

        def spy_group(jobs: Any) -> None:
            sizes.append(len(jobs))
            group(jobs)

        monkeypatch.setattr(store._io, "_group", spy_group)
    else:
        flush = store._io._flush

        def spy_flush(round_: Any) -> None:
            if round_.waiting:
                sizes.append(len(round_.waiting))
            flush(round_)

        monkeypatch.setattr(store._io, "_flush", spy_flush)
    return sizes


def _step(i: int, n: int) -> tuple[list[Message], list[Any]]:
    messages = [Message.user(f"q{i}.{n}"), Message.assistant(f"a{i}.{n}")]
    return messages, [batch(Command.set("count", n + 1), revision=n + 1)]


@pytest.mark.parametrize("kind", KINDS)
async def test_many_concurrent_commits_to_different_threads_all_land(
    kind: str, tmp_path: Path
) -> None:
    store = _open(kind, tmp_path)
    threads, steps = 120, 4

    async def run(i: int) -> int:
        version = 0
        for n in range(steps):
            messages, batches = _step(i, n)
            version = await store.commit(binding(f"t{i}"), version, messages, batches)
        return version

    assert await asyncio.gather(*(run(i) for i in range(threads))) == [steps] * threads
    await store.close()
    reopened = _open(kind, tmp_path)
    for i in range(threads):
        snap = await reopened.load(binding(f"t{i}"))
        assert snap.version == steps
        assert [m.text for m in snap.messages][-2:] == [f"q{i}.{steps - 1}", f"a{i}.{steps - 1}"]
        assert len(snap.messages) == 2 * steps
        assert snap.state[(Scope.THREAD, "count")] == steps
    await reopened.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_conflict_in_a_group_fails_only_that_commit(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _open(kind, tmp_path)
    for tid in ("stale", "dup"):
        await store.commit(binding(tid), 0, [Message.user("first", id=f"{tid}-m")], [])
    sizes = _record_groups(store, monkeypatch)
    release = _hold(store)
    good = [
        asyncio.ensure_future(store.commit(binding(f"g{i}"), 0, *_step(i, 0))) for i in range(3)
    ]
    stale = asyncio.ensure_future(store.commit(binding("stale"), 0, *_step(9, 0)))
    dup = asyncio.ensure_future(
        store.commit(binding("dup"), 1, [Message.user("again", id="dup-m")], [])
    )
    more = [
        asyncio.ensure_future(store.commit(binding(f"g{i}"), 0, *_step(i, 0))) for i in range(3, 6)
    ]
    await asyncio.sleep(0.05)  # every commit is queued behind the held thread
    release.set()
    assert [await f for f in good + more] == [1] * 6
    with pytest.raises(VersionConflict):
        await stale
    with pytest.raises(DuplicateMessageId):
        await dup
    assert max(sizes) >= 6, sizes  # (at least) the six that land were handled as one group
    await store.close()
    reopened = _open(kind, tmp_path)
    for i in range(6):
        snap = await reopened.load(binding(f"g{i}"))
        assert (snap.version, [m.text for m in snap.messages]) == (1, [f"q{i}.0", f"a{i}.0"])
        assert snap.state == {(Scope.THREAD, "count"): 1}
    for tid in ("stale", "dup"):
        snap = await reopened.load(binding(tid))
        assert (snap.version, [m.text for m in snap.messages], snap.state) == (1, ["first"], {})
    await reopened.close()


_CRASH = """
import asyncio, os, sys, threading
from awaken_runtime import Command, Message
from awaken_runtime.stores import FileStore, SQLiteStore
from awaken_runtime.stores.file import _mirror as _file_mirror
from awaken_runtime.stores.sqlite import _commit as _sqlite_commit
from awaken_runtime.stores._worker import Job
from awaken_store_conformance import batch, binding

kind, path = sys.argv[1], sys.argv[2]
store = SQLiteStore(path) if kind == "sqlite" else FileStore(path)
real_insert, real_append = _sqlite_commit.insert_commit, _file_mirror.append_line

def insert(cur, b, *args):
    real_insert(cur, b, *args)
    if b.thread_id == "t3":
        os._exit(9)  # killed with t1..t3 written inside the group's open transaction

def append(path, line, **kw):
    if path.name == "t3.jsonl":
        with open(path, "ab") as f:
            f.write(line[: len(line) // 2])  # killed halfway through t3's line
        os._exit(9)
    return real_append(path, line, **kw)

_sqlite_commit.insert_commit = insert
import awaken_runtime.stores.sqlite._store as s
s.insert_commit = insert
_file_mirror.append_line = append

async def main():
    release = threading.Event()
    store._io.worker.submit(Job("raw" if kind == "sqlite" else "op", release.wait, ""))
    commits = [
        asyncio.ensure_future(store.commit(
            binding(f"t{i}"), 0, [Message.user(f"q{i}"), Message.assistant(f"a{i}")],
            [batch(Command.set("count", 1))],
        ))
        for i in range(1, 6)
    ]
    await asyncio.sleep(0.05)
    release.set()
    await asyncio.gather(*commits)

asyncio.run(main())
"""


@pytest.mark.parametrize("kind", KINDS)
async def test_a_crash_in_the_middle_of_a_group_leaves_no_commit_half_written(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / ("a.db" if kind == "sqlite" else "f")
    child = subprocess.run(
        [sys.executable, "-c", _CRASH, kind, str(path)], capture_output=True, text=True
    )
    assert child.returncode == 9, child.stderr
    store = _open(kind, tmp_path)
    found = {}
    for i in range(1, 6):
        snap = await store.load(binding(f"t{i}"))
        found[i] = snap.version
        if snap.version:  # a commit that is there is there whole
            assert [m.text for m in snap.messages] == [f"q{i}", f"a{i}"]
            assert snap.state == {(Scope.THREAD, "count"): 1}
        else:
            assert snap.messages == [] and snap.state == {}
    if kind == "sqlite":  # one transaction: none of the group, not even t1 and t2
        assert found == dict.fromkeys(range(1, 6), 0)
    else:  # never acknowledged, but appended whole before the crash: t3's torn line is cut
        assert found == {1: 1, 2: 1, 3: 0, 4: 0, 5: 0}
    assert await store.commit(binding("t3"), 0, [Message.user("after")], []) == 1
    await store.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_cancelled_commit_has_ended_when_the_cancellation_arrives(
    kind: str, tmp_path: Path
) -> None:
    store = _open(kind, tmp_path)
    release = _hold(store)
    task = asyncio.ensure_future(store.commit(binding("c"), 0, [Message.user("x")], []))
    await asyncio.sleep(0.02)
    task.cancel()
    await asyncio.sleep(0.02)
    assert not task.done()  # no store operation of the caller is left in flight
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await store.load(binding("c"))).version == 1  # it had landed: nothing lost
    await store.close()
