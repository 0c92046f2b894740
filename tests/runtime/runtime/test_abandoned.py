"""Issue 16, item 4: runs whose process died do not stay RUNNING forever.

A dead process leaves a ``RUNNING`` record (or a parked run whose tickets its
resume had claimed). ``Runtime.recover_abandoned`` ends each such run
``Error(AbandonedFailure)`` once its lease lapsed, leaves threads with a live
lease alone, and ``Runtime.prune`` does the same before pruning, so the dead
records can go.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from awaken_runtime import AbandonedFailure, Error, Message, Phase, ThreadBusy
from awaken_runtime.stores import FileStore, InMemoryStore, SQLiteStore
from awaken_runtime.testing import scripted_runtime
from awaken_store_conformance import binding, run_record

TTL = 0.3


def _stores(tmp_path: Path) -> dict[str, object]:
    return {
        "sqlite": SQLiteStore(tmp_path / "a.db", lease_ttl=TTL),
        "file": FileStore(tmp_path / "f", lease_ttl=TTL),
        "memory": InMemoryStore(lease_ttl=TTL),
    }


async def _leave_dead_run(store: object, thread_id: str, run_id: str) -> None:
    """What a process killed mid-step leaves: a RUNNING record and a lapsing lease."""
    b = binding(thread_id)
    record = run_record(run_id, thread_id, Phase.RUNNING)
    await store.commit(b, 0, [Message.user("pay 5")], [], run_record=record)  # type: ignore[attr-defined]
    await store.acquire_lease(thread_id, "dead-process:1", TTL)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["sqlite", "file", "memory"])
async def test_a_dead_run_is_ended_abandoned_and_can_then_be_pruned(
    tmp_path: Path, kind: str
) -> None:
    store = _stores(tmp_path)[kind]
    await _leave_dead_run(store, "t-dead", "run-dead")
    rig = scripted_runtime(["unused"], store=store)  # type: ignore[arg-type]

    # The lease is live: the run may still be alive somewhere, so nothing is touched.
    assert await rig.runtime.recover_abandoned() == []
    record = await store.get_run("run-dead")  # type: ignore[attr-defined]
    assert record.phase is Phase.RUNNING

    time.sleep(TTL * 1.5)
    assert await rig.runtime.recover_abandoned() == ["run-dead"]
    record = await store.get_run("run-dead")  # type: ignore[attr-defined]
    assert record.phase is Phase.ENDED
    assert isinstance(record.end_cause, Error)
    assert isinstance(record.end_cause.failure, AbandonedFailure)
    assert "run-dead" in record.end_cause.failure.message
    # Its committed input is kept; a second sweep finds nothing more.
    snap = await store.load(binding("t-dead"))  # type: ignore[attr-defined]
    assert [m.text for m in snap.messages] == ["pay 5"]
    assert await rig.runtime.recover_abandoned() == []

    # A later run on the thread supersedes it, and prune can then remove the record.
    state = await rig.run("again", thread_id="t-dead")
    assert state.final_text == "unused"
    report = await rig.runtime.prune(datetime.now(UTC) + timedelta(seconds=5))
    assert report.runs == 1
    assert await store.get_run("run-dead") is None  # type: ignore[attr-defined]


async def test_prune_ends_dead_runs_first(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db", lease_ttl=TTL)
    await _leave_dead_run(store, "t-1", "run-1")
    await _leave_dead_run(store, "t-2", "run-2")
    rig = scripted_runtime(["x"], store=store)  # type: ignore[arg-type]
    time.sleep(TTL * 1.5)
    # A live run elsewhere holds t-2 again: it is not ended.
    await store.acquire_lease("t-2", "live-process:2", 30.0)
    await rig.runtime.prune(datetime.now(UTC) + timedelta(seconds=5))
    one, two = await store.get_run("run-1"), await store.get_run("run-2")
    assert one is not None and one.phase is Phase.ENDED
    assert two is not None and two.phase is Phase.RUNNING


async def test_only_the_named_threads_are_swept(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db", lease_ttl=TTL)
    await _leave_dead_run(store, "t-1", "run-1")
    await _leave_dead_run(store, "t-2", "run-2")
    rig = scripted_runtime(["x"], store=store)  # type: ignore[arg-type]
    time.sleep(TTL * 1.5)
    assert await rig.runtime.recover_abandoned(["t-2", "t-unknown"]) == ["run-2"]
    one = await store.get_run("run-1")
    assert one is not None and one.phase is Phase.RUNNING


@pytest.mark.parametrize("kind", ["sqlite", "file", "memory"])
async def test_starting_a_dead_run_again_under_its_own_id_is_refused_not_abandoned(
    tmp_path: Path, kind: str
) -> None:
    """A redelivered job must continue the run; ``run`` with its id ends nothing."""
    store = _stores(tmp_path)[kind]
    await _leave_dead_run(store, "t-again", "run-again")
    rig = scripted_runtime(["continued"], store=store)  # type: ignore[arg-type]
    time.sleep(TTL * 1.5)
    with pytest.raises(ThreadBusy, match=r"'run-again' was already started.*continue_run"):
        await rig.run("pay 5", thread_id="t-again", run_id="run-again")
    record = await store.get_run("run-again")  # type: ignore[attr-defined]
    assert record.phase is Phase.RUNNING, "the run was ended instead of left to continue"
    assert rig.executor.calls == 0
    state = await rig.runtime.continue_run("t-again")
    assert state is not None and state.run_id == "run-again" and state.final_text == "continued"
    snap = await store.load(binding("t-again"))  # type: ignore[attr-defined]
    assert [m.text for m in snap.messages if m.role == "user"] == ["pay 5"]
