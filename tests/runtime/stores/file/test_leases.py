"""Issue 19, item 3: the file store's lease table is appended to, not rewritten per change.

Each acquire, renew and release appends one line to ``leases.jsonl``; another
store object on the directory (another process) reads only what is new; the
log is rewritten as the live leases only once most of its lines are dead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from awaken_runtime import ThreadBusy
from awaken_runtime.stores import FileStore


async def test_acquire_and_release_append_one_line_each(tmp_path: Path) -> None:
    store, other = FileStore(tmp_path), FileStore(tmp_path)
    held = [await store.acquire_lease(f"live{i}", "a", 30) for i in range(200)]
    log = tmp_path / "leases.jsonl"
    inode, size = log.stat().st_ino, log.stat().st_size
    for i in range(50):
        lease = await store.acquire_lease(f"short{i}", "a", 30)
        await store.release_lease(lease)
    assert log.stat().st_ino == inode  # never rewritten: 200 live leases were not copied
    lines = log.read_bytes()[size:].splitlines()
    assert len(lines) == 100
    with pytest.raises(ThreadBusy):  # the other process sees every live lease
        await other.acquire_lease("live7", "b", 30)
    assert (await other.acquire_lease("short3", "b", 30)).holder == "b"
    renewed = await store.renew_lease(held[0], 60)
    assert renewed.expires_at > held[0].expires_at


async def test_a_mostly_dead_log_is_compacted_and_still_right(tmp_path: Path) -> None:
    store, other = FileStore(tmp_path), FileStore(tmp_path)
    keep = await store.acquire_lease("keep", "a", 30)
    log = tmp_path / "leases.jsonl"
    for i in range(200):
        await store.release_lease(await store.acquire_lease(f"t{i}", "a", 30))
    # 401 changes, but rewritten as the live leases once the dead lines outnumbered them
    assert len(log.read_bytes().splitlines()) < 100
    with pytest.raises(ThreadBusy):
        await other.acquire_lease("keep", "b", 30)
    for i in range(0, 200, 37):
        assert (await other.acquire_lease(f"t{i}", "b", 30)).holder == "b"
    await store.release_lease(keep)
    assert (await other.acquire_lease("keep", "b", 30)).holder == "b"
