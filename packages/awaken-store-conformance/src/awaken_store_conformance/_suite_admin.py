"""Conformance: leases, retention, concurrency, thread admin, event logs, configs."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from awaken_runtime import Command, Message, Phase, Scope, ThreadBusy, ToolCall
from awaken_runtime.stores import ConfigNotFound, FullStore, LeaseLost, StreamEvent

from ._helpers import batch, binding, commit_retry, commit_worker, parked_run, run_record

__all__ = ["AdminSuite"]


class AdminSuite:
    """Everything around threads. Needs ``store``; ``store_opener`` enables the process test."""

    @pytest.fixture
    def store_opener(self) -> Callable[[], FullStore] | None:
        """A picklable zero-argument callable opening the same store in another process."""
        return None

    async def test_lease_acquire_expire_steal(self, store: FullStore) -> None:
        lease = await store.acquire_lease("th", "h1", 0.15)
        assert lease.holder == "h1" and lease.thread_id == "th"
        with pytest.raises(ThreadBusy):
            await store.acquire_lease("th", "h2", 10)
        other = await store.acquire_lease("th-other", "h2", 10)
        lease = await store.renew_lease(lease, 0.15)
        await asyncio.sleep(0.3)
        stolen = await store.acquire_lease("th", "h2", 10)
        with pytest.raises(LeaseLost):
            await store.renew_lease(lease, 10)
        await store.release_lease(lease)  # a stale release changes nothing
        with pytest.raises(ThreadBusy):
            await store.acquire_lease("th", "h3", 10)
        await store.release_lease(stolen)
        await store.release_lease(other)
        again = await store.acquire_lease("th", "h3", 10)
        await store.release_lease(again)

    async def test_retention_removes_only_what_it_should(self, store: FullStore) -> None:
        old = datetime.now(UTC) - timedelta(days=3)
        a, b = binding(), binding()
        call = ToolCall(id="c1", name="x")
        await store.commit(
            a,
            0,
            [Message.user("keep me")],
            [batch(Command.set("k", 1))],
            run_record("r1", a.thread_id, updated_at=old),
        )
        await store.commit(a, 1, [], [], run_record("r2", a.thread_id, updated_at=old))
        await store.commit(
            a,
            2,
            [Message.assistant(None, tool_calls=[call])],
            [],
            run_record("r3", a.thread_id, Phase.WAITING, updated_at=old),
            parked_run(a, "r3", [call]),
        )
        await store.commit(b, 0, [Message.user("b")], [], run_record("r4", b.thread_id))
        for run_id in ("r1", "r2", "r3", "r4"):
            await store.append_events(run_id, [StreamEvent(seq=i, data={"i": i}) for i in (1, 2)])
        await store.append_events("orphan", [StreamEvent(seq=1, data={}, at=old)])
        for n in (1, 2, 3):
            await store.publish_config({"id": "ag", "instructions": f"v{n}"})

        report = await store.prune(timedelta(days=1))
        assert (report.runs, report.events, report.configs) == (2, 5, 0)
        assert [r.run_id for r in await store.list_runs(a.thread_id)] == ["r3"]
        for run_id, count in (("r1", 0), ("r2", 0), ("r3", 2), ("r4", 2), ("orphan", 0)):
            assert len(await store.read_events(run_id)) == count, run_id
        snap = await store.load(a)
        assert [m.text for m in snap.messages] == ["keep me", ""]
        assert snap.state == {(Scope.THREAD, "k"): 1} and snap.parked is not None

        report = await store.prune(datetime.now(UTC) + timedelta(hours=1))
        assert (report.runs, report.configs) == (0, 2)
        assert await store.get_run("r4") is not None  # the latest run of its thread
        assert await store.read_events("r4") == []
        assert [v.version for v in await store.config_history("ag")] == [3]
        assert (await store.publish_config({"id": "ag"})).version == 4

    async def test_two_tasks_never_lose_a_write(self, store: FullStore) -> None:
        b = binding()

        async def writer(tag: str) -> None:
            for i in range(15):
                await commit_retry(
                    store,
                    b,
                    [Message.user(f"{tag}{i}", id=f"{tag}{i}")],
                    [batch(Command.set(tag, i))],
                )

        await asyncio.gather(writer("a"), writer("b"))
        snap = await store.load(b)
        ids = [m.id for m in snap.messages]
        assert sorted(ids) == sorted([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)])
        assert [i for i in ids if i[0] == "a"] == [f"a{i}" for i in range(15)]
        assert snap.version == 30 and snap.state[(Scope.THREAD, "a")] == 14

    async def test_two_processes_never_lose_a_write(
        self, store: FullStore, store_opener: Callable[[], FullStore] | None
    ) -> None:
        if store_opener is None:
            pytest.skip("the backend gives no store_opener (a store other processes can open)")
        tid = binding().thread_id
        ctx = multiprocessing.get_context("spawn")
        procs = [ctx.Process(target=commit_worker, args=(store_opener, tid, t, 12)) for t in "xy"]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0, 0]
        snap = await store.load(binding(tid))
        ids = [m.id for m in snap.messages]
        assert len(ids) == 24 and len(set(ids)) == 24 and snap.version == 24
        for tag in "xy":
            assert [i for i in ids if i[0] == tag] == [f"{tag}-{n}" for n in range(12)]

    async def test_list_filter_and_delete_threads(self, store: FullStore) -> None:
        names = ["L-a", "L-b", "L-c", "L-d"]
        for name in names:
            await store.commit(binding(name), 0, [Message.user(name)], [])
        call = ToolCall(id="c", name="x")
        await store.commit(
            binding("L-b"),
            1,
            [Message.assistant(None, tool_calls=[call])],
            [],
            run_record("rb", "L-b", Phase.WAITING),
            parked_run(binding("L-b"), "rb", [call]),
        )
        first = await store.list_threads(limit=2)
        assert [t.thread_id for t in first] == ["L-a", "L-b"]
        rest = await store.list_threads(after="L-b", limit=10)
        assert [t.thread_id for t in rest] == ["L-c", "L-d"]
        assert [t.thread_id for t in await store.list_threads(parked=True)] == ["L-b"]
        info = (await store.list_threads(limit=2))[1]
        assert (info.version, info.messages, info.parked, info.latest_run_id) == (2, 2, True, "rb")
        future = datetime.now(UTC) + timedelta(minutes=5)
        assert await store.list_threads(updated_after=future) == []

        b = binding("L-b")
        await store.write_scope(Scope.PROFILE, b.profile_id, [Command.set("p", 1)])
        await store.append_events("rb", [StreamEvent(seq=1, data={"x": 1})])
        assert await store.delete_thread("L-b") is True
        assert await store.delete_thread("L-b") is False
        snap = await store.load(b)
        assert (snap.messages, snap.version, snap.parked) == ([], 0, None)
        assert await store.get_run("rb") is None and await store.read_events("rb") == []
        assert await store.read_scope(Scope.PROFILE, b.profile_id) == {"p": 1}
        assert [t.thread_id for t in await store.list_threads()] == ["L-a", "L-c", "L-d"]
        await store.commit(b, 0, [Message.user("reborn")], [])

    async def test_stream_event_logs(self, store: FullStore) -> None:
        events = [StreamEvent(seq=i, data={"type": "text", "text": f"✓{i}"}) for i in (1, 2, 5)]
        await store.append_events("run-e", events)
        assert await store.read_events("run-e") == events
        assert [e.seq for e in await store.read_events("run-e", after=1)] == [2, 5]
        assert [e.seq for e in await store.read_events("run-e", after=1, limit=1)] == [2]
        with pytest.raises(ValueError):
            await store.append_events(
                "run-e", [StreamEvent(seq=6, data={}), StreamEvent(seq=5, data={})]
            )
        assert len(await store.read_events("run-e")) == 3
        await store.append_events("run-f", [StreamEvent(seq=1, data={})])
        assert len(await store.read_events("run-e")) == 3 and await store.read_events("nope") == []

    async def test_config_registry_versions(self, store: FullStore) -> None:
        from awaken_runtime import AgentConfig

        v1 = await store.publish_config({"id": "ag", "model_binding": "m", "instructions": "one"})
        v2 = await store.publish_config(
            AgentConfig(id="ag", model_binding="m", instructions="two"), note="second"
        )
        assert (v1.version, v2.version, v2.note) == (1, 2, "second")
        assert (await store.get_config("ag")).config["instructions"] == "two"
        assert (await store.get_config("ag", 1)).config == v1.config
        back = await store.rollback_config("ag", 1)
        assert back.version == 3 and back.config == v1.config
        assert [v.version for v in await store.config_history("ag")] == [1, 2, 3]
        with pytest.raises(ConfigNotFound):
            await store.get_config("ag", 9)
        with pytest.raises(ConfigNotFound):
            await store.get_config("nobody")
        with pytest.raises(ValueError):
            await store.publish_config({"instructions": "no id"})
        assert await store.config_history("nobody") == []
