"""File backend specifics: torn lines, corrupt files, orphan lines, compaction, IO errors."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from awaken_runtime import Command, MergePolicy, Message, Scope
from awaken_runtime.stores import FileStore, StoreCorrupt, StoreIOError
from awaken_store_conformance import batch, binding

C = MergePolicy.COMMUTATIVE


def _thread_file(root: Path, thread_id: str) -> Path:
    return root / "threads" / f"{thread_id}.jsonl"


async def _three_commits(root: Path, tid: str = "t1") -> FileStore:
    store = FileStore(root)
    b = binding(tid)
    for i in range(3):
        await store.commit(b, i, [Message.user(f"m{i}")], [batch(Command.set("k", i))])
    return store


async def test_a_torn_last_line_is_recovered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await _three_commits(tmp_path)
    path = _thread_file(tmp_path, "t1")
    with open(path, "ab") as f:
        f.write(b'{"c":"dead","v":4,"m":[{"role":"us')  # a crash mid-append
    fresh = FileStore(tmp_path)
    snap = await fresh.load(binding("t1"))
    assert snap.version == 3 and [m.text for m in snap.messages] == ["m0", "m1", "m2"]
    assert "torn last line" in caplog.text
    assert path.read_bytes().endswith(b"\n")
    assert await fresh.commit(binding("t1"), 3, [Message.user("m3")], []) == 4


async def test_a_corrupt_line_names_the_file_and_line(tmp_path: Path) -> None:
    await _three_commits(tmp_path)
    path = _thread_file(tmp_path, "t1")
    lines = path.read_bytes().split(b"\n")
    lines[1] = b"{not json at all"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(StoreCorrupt) as info:
        await FileStore(tmp_path).load(binding("t1"))
    assert str(path) in str(info.value) and "line 2" in str(info.value)


async def test_a_line_that_is_json_but_not_a_commit_is_corrupt(tmp_path: Path) -> None:
    await _three_commits(tmp_path)
    path = _thread_file(tmp_path, "t1")
    with open(path, "ab") as f:
        f.write(b'{"hello": "world"}\n')
    with pytest.raises(StoreCorrupt, match="line 4 is not a valid commit"):
        await FileStore(tmp_path).load(binding("t1"))


async def test_a_global_line_without_its_thread_line_is_dropped(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    b = binding("t1")
    await store.commit(b, 0, [], [batch(Command.set("p", 1, scope=Scope.PROFILE))])
    orphan = {
        "c": "never-landed",
        "t": "t1",
        "ops": [["profile", b.profile_id, Command.set("p", 99).model_dump(mode="json")]],
        "run": False,
    }
    with open(tmp_path / "global.jsonl", "a") as f:
        f.write(json.dumps(orphan) + "\n")
    fresh = FileStore(tmp_path)
    assert await fresh.read_scope(Scope.PROFILE, b.profile_id) == {"p": 1}
    assert b"never-landed" not in (tmp_path / "global.jsonl").read_bytes()


async def test_compaction_rewrites_one_line_and_keeps_everything(tmp_path: Path) -> None:
    store = await _three_commits(tmp_path)
    before = await store.load(binding("t1"))
    store.compact("t1")
    path = _thread_file(tmp_path, "t1")
    assert path.read_bytes().count(b"\n") == 1
    assert not list(tmp_path.glob("threads/*.tmp"))
    for reader in (store, FileStore(tmp_path)):
        after = await reader.load(binding("t1"))
        assert (after.messages, after.state, after.version) == (
            before.messages,
            before.state,
            before.version,
        )
        assert len((await reader.read_batches("t1")).items) == 3
    assert await FileStore(tmp_path).commit(binding("t1"), 3, [Message.user("m3")], []) == 4


async def test_merging_one_field_appends_a_small_line(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    b = binding("big")
    await store.commit(
        b, 0, [], [batch(Command.set("m", {f"f{i}": i for i in range(100_000)}, merge=C))]
    )
    path = _thread_file(tmp_path, "big")
    size = path.stat().st_size
    await store.commit(b, 1, [], [batch(Command.set("m", {"f1": "one"}, merge=C))])
    assert path.stat().st_size - size < 400
    assert (await FileStore(tmp_path).load(b)).state[(Scope.THREAD, "m")]["f1"] == "one"


async def test_a_failed_fsync_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await _three_commits(tmp_path)
    path = _thread_file(tmp_path, "t1")
    size = path.stat().st_size
    real = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    b = binding("t1")
    with pytest.raises(StoreIOError) as info:
        await store.commit(
            b, 3, [Message.user("lost")], [batch(Command.set("p", 1, scope=Scope.PROFILE))]
        )
    assert "No space left" in str(info.value) and str(tmp_path) in str(info.value)
    monkeypatch.setattr(os, "fsync", real)
    assert path.stat().st_size == size
    for reader in (store, FileStore(tmp_path)):
        snap = await reader.load(b)
        assert snap.version == 3 and (Scope.PROFILE, "p") not in snap.state


async def test_processes_see_each_others_commits(tmp_path: Path) -> None:
    one, two = FileStore(tmp_path), FileStore(tmp_path)
    b = binding("shared")
    await one.commit(b, 0, [Message.user("from one")], [])
    await two.commit(b, 1, [Message.user("from two")], [])
    await one.commit(b, 2, [Message.user("one again")], [])
    assert [m.text for m in (await two.load(b)).messages] == ["from one", "from two", "one again"]
    await two.delete_thread("shared")
    assert (await one.load(b)).version == 0


async def test_a_corrupt_lease_table_names_the_file(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    (tmp_path / "leases.jsonl").write_text("[[[\n")
    with pytest.raises(StoreCorrupt, match=r"leases\.json"):
        await store.acquire_lease("t", "h", 1)


def test_an_unwritable_directory_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreIOError):
        FileStore(tmp_path / "file" / "store")


async def test_a_failed_thread_append_rolls_the_global_line_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await _three_commits(tmp_path)
    await store.write_scope(Scope.SHARED, "team", [Command.set("a", 1)])
    global_file = tmp_path / "global.jsonl"
    before = global_file.read_bytes()
    real, calls = os.fsync, []

    def second_fails(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.EACCES, "Permission denied")
        real(fd)

    monkeypatch.setattr(os, "fsync", second_fails)
    b = binding("t1")
    with pytest.raises(StoreIOError, match="Permission denied"):
        await store.commit(
            b, 3, [Message.user("x")], [batch(Command.set("p", 7, scope=Scope.PROFILE))]
        )
    monkeypatch.setattr(os, "fsync", real)
    assert global_file.read_bytes() == before
    for reader in (store, FileStore(tmp_path)):
        snap = await reader.load(b)
        assert snap.version == 3 and (Scope.PROFILE, "p") not in snap.state
    assert (
        await store.commit(
            b, 3, [Message.user("x")], [batch(Command.set("p", 7, scope=Scope.PROFILE))]
        )
        == 4
    )
    assert (await FileStore(tmp_path).load(b)).state[(Scope.PROFILE, "p")] == 7


async def test_deleting_a_thread_keeps_the_profile_writes_of_its_commits(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    b = binding("gone")
    await store.commit(b, 0, [], [batch(Command.set("p", 1, scope=Scope.PROFILE))])
    assert await store.delete_thread("gone")
    assert await FileStore(tmp_path).read_scope(Scope.PROFILE, b.profile_id) == {"p": 1}
