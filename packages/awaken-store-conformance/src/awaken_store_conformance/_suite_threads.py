"""Conformance: thread commits, loads, invariants, cursors, tickets, run records."""

from __future__ import annotations

import pytest

from awaken_runtime import (
    Command,
    ContentPart,
    MergePolicy,
    Message,
    Phase,
    Scope,
    ToolCall,
    VersionConflict,
    replay,
)
from awaken_runtime.stores import (
    DuplicateMessageId,
    FullStore,
    RunRecordError,
    UnmatchedToolResult,
)

from ._helpers import batch, binding, canonical, parked_run, run_record

__all__ = ["ThreadSuite"]


class ThreadSuite:
    """Commits and loads of one thread. Needs a ``store`` fixture."""

    async def test_unknown_thread_loads_empty_at_version_zero(self, store: FullStore) -> None:
        snap = await store.load(binding())
        assert (snap.messages, snap.state, snap.version, snap.parked) == ([], {}, 0, None)

    async def test_round_trip_messages_and_every_scope(self, store: FullStore) -> None:
        b = binding()
        call = ToolCall(id="c1", name="add", arguments={"a": 1})
        msgs = [
            Message.user("hi"),
            Message.assistant("calling", tool_calls=[call]),
            Message.tool("c1", "2", name="add", metadata={"is_error": False}),
        ]
        cmds = [
            Command.set("t", [1, 2], scope=Scope.THREAD),
            Command.set("p", {"lang": "fr"}, scope=Scope.PROFILE),
            Command.set("s", "shared", scope=Scope.SHARED),
            Command.set("r", "run only", scope=Scope.RUN),
        ]
        rec = run_record("run-1", b.thread_id)
        version = await store.commit(b, 0, msgs, [batch(*cmds)], rec)
        assert version == 1
        snap = await store.load(b)
        assert snap.messages == msgs
        assert snap.state == {
            (Scope.THREAD, "t"): [1, 2],
            (Scope.PROFILE, "p"): {"lang": "fr"},
            (Scope.SHARED, "s"): "shared",
        }
        assert snap.version == 1
        assert snap.latest_run == rec
        other = await store.load(binding(None, "other-profile", "other-ns"))
        assert other.state == {}
        same_profile = await store.load(binding(None, b.profile_id, b.namespace))
        assert set(same_profile.state) == {(Scope.PROFILE, "p"), (Scope.SHARED, "s")}

    async def test_each_commit_adds_one_version(self, store: FullStore) -> None:
        b = binding()
        for expected in range(5):
            assert (
                await store.commit(b, expected, [Message.user(str(expected))], []) == expected + 1
            )
        assert (await store.load(b)).version == 5
        assert await store.commit(b, 5, [], []) == 6

    async def test_version_conflict_leaves_the_log_untouched(self, store: FullStore) -> None:
        b = binding()
        await store.commit(b, 0, [Message.user("one")], [batch(Command.set("k", 1))])
        before = await store.load(b)
        with pytest.raises(VersionConflict) as info:
            await store.commit(b, 0, [Message.user("two")], [batch(Command.set("k", 2))])
        assert info.value.thread_id == b.thread_id and info.value.actual == 1
        after = await store.load(b)
        assert (after.messages, after.state, after.version) == (
            before.messages,
            before.state,
            before.version,
        )
        assert len((await store.read_batches(b.thread_id)).items) == 1

    async def test_duplicate_message_ids_are_rejected(self, store: FullStore) -> None:
        b = binding()
        await store.commit(b, 0, [Message.user("a", id="m1")], [])
        with pytest.raises(DuplicateMessageId):
            await store.commit(b, 1, [Message.user("b", id="m1")], [batch(Command.set("k", 1))])
        with pytest.raises(DuplicateMessageId):
            await store.commit(b, 1, [Message.user("c", id="m2"), Message.user("d", id="m2")], [])
        snap = await store.load(b)
        assert [m.id for m in snap.messages] == ["m1"] and snap.version == 1 and snap.state == {}
        # The same id in another thread is fine.
        await store.commit(binding(), 0, [Message.user("a", id="m1")], [])

    async def test_tool_messages_need_a_matching_call(self, store: FullStore) -> None:
        b = binding()
        with pytest.raises(UnmatchedToolResult):
            await store.commit(b, 0, [Message.user("q"), Message.tool("nope", "x")], [])
        assert (await store.load(b)).version == 0
        call = ToolCall(id="c9", name="t")
        await store.commit(b, 0, [Message.assistant(None, tool_calls=[call])], [])
        await store.commit(b, 1, [Message.tool("c9", "done")], [])
        assert [m.role for m in (await store.load(b)).messages] == ["assistant", "tool"]

    async def test_run_scope_is_never_persisted(self, store: FullStore) -> None:
        b = binding()
        await store.commit(b, 0, [], [batch(Command.set("r", 1, scope=Scope.RUN))])
        snap = await store.load(b)
        assert snap.state == {} and (await store.read_batches(b.thread_id)).items == []

    async def test_cursor_pagination(self, store: FullStore) -> None:
        b = binding()
        version = 0
        for i in range(7):
            version = await store.commit(
                b,
                version,
                [Message.user(f"m{i}"), Message.user(f"n{i}")],
                [batch(Command.set("i", i), revision=i + 1)],
            )
        seen: list[str] = []
        after = 0
        while True:
            page = await store.read_messages(b.thread_id, after=after, limit=4)
            seen += [m.text for m in page.items]
            assert page.cursor == after + len(page.items)
            after = page.cursor
            if not page.more:
                break
        assert seen == [x for i in range(7) for x in (f"m{i}", f"n{i}")]
        batches = await store.read_batches(b.thread_id, after=5, limit=10)
        assert [bt.revision for bt in batches.items] == [6, 7] and not batches.more
        assert (await store.read_messages(b.thread_id, after=14)).items == []
        assert (await store.read_messages("no-such-thread")).items == []

    async def test_every_message_shape_loads_as_committed_each_time(self, store: FullStore) -> None:
        # Each load after a commit goes through what a store keeps of the thread; the
        # messages must equal what was committed, and the snapshot's call ids (if the
        # store gives them) must be exactly those of the messages.
        b = binding()
        every_json = {
            "null": None,
            "bools": [True, False],
            "ints": [0, -7, 2**70],
            "floats": [1.5, -0.25, 1e300],
            "text": 'quote " backslash \\ nl \n nul \u0000 é 数据 🎉',
            "nested": {"a": [[], {}, [{"b": None}]], "": "empty key"},
        }
        call = ToolCall(id="c1", name="lookup", arguments=every_json)
        bad = ToolCall(id="c2", name="lookup", parse_error="not JSON", raw_arguments="{nope")
        image = {"url": "data:image/png;base64,iVBOR", "detail": "low"}
        commits = [
            [Message.system("be brief"), Message.user("hi", metadata={"source": "web"})],
            [
                Message(
                    role="user",
                    content=[
                        ContentPart(type="text", text="look"),
                        ContentPart(type="image_url", image_url=image),
                    ],
                ),
                Message.assistant("calling", [call, bad], metadata=every_json),
                Message.tool("c1", '{"ok": true}', name="lookup"),
                Message.tool("c2", "argument error", metadata={"is_error": True}),
            ],
            [Message.assistant(None, [ToolCall(id="c3", name="f")]), Message.tool("c3", "")],
            [Message.assistant("done", name="helper")],
        ]
        expected: list[Message] = []
        for version, commit in enumerate(commits):
            await store.commit(b, version, commit, [])
            expected += commit
            for _ in range(2):  # after the commit, then with nothing new
                snap = await store.load(b)
                assert snap.messages == expected
                assert [m.model_dump() for m in snap.messages] == [m.model_dump() for m in expected]
                calls = {c.id for m in expected for c in m.tool_calls or ()}
                assert snap.call_ids is None or snap.call_ids == calls
        assert (await store.read_messages(b.thread_id, limit=100)).items == expected

    async def test_tickets_are_stored_listed_and_cleared(self, store: FullStore) -> None:
        b = binding()
        calls = [ToolCall(id="c1", name="x"), ToolCall(id="c2", name="y", arguments={"é": "ü"})]
        parked = parked_run(b, "run-p", calls)
        msgs = [Message.user("go"), Message.assistant(None, tool_calls=calls)]
        rec = run_record("run-p", b.thread_id, Phase.WAITING)
        await store.commit(b, 0, msgs, [], rec, parked)
        snap = await store.load(b)
        assert snap.parked == parked  # both tickets, tkt-c1 and tkt-c2
        listed = await store.list_threads(parked=True)
        assert b.thread_id in [t.thread_id for t in listed]
        kept = parked.model_copy(update={"tickets": parked.tickets[1:]})
        await store.commit(b, 1, [Message.tool("c1", "ok")], [], rec, kept)
        assert (await store.load(b)).parked == kept
        await store.commit(b, 2, [Message.tool("c2", "ok")], [], run_record("run-p", b.thread_id))
        assert (await store.load(b)).parked is None
        assert b.thread_id not in [t.thread_id for t in await store.list_threads(parked=True)]

    async def test_run_records_and_status_transitions(self, store: FullStore) -> None:
        b = binding()
        waiting = run_record("run-a", b.thread_id, Phase.WAITING)
        await store.commit(b, 0, [], [], waiting)
        first = await store.get_run("run-a")
        assert first is not None and first.phase is Phase.WAITING
        ended = run_record("run-a", b.thread_id, Phase.ENDED)
        await store.commit(b, 1, [], [], ended)
        got = await store.get_run("run-a")
        assert got is not None and got.phase is Phase.ENDED and got.end_cause == ended.end_cause
        assert got.started_at == waiting.started_at and got.cost == 0.25
        with pytest.raises(RunRecordError):
            await store.commit(b, 2, [Message.user("x")], [], run_record("run-a", b.thread_id))
        assert (await store.load(b)).version == 2
        with pytest.raises(RunRecordError):
            await store.commit(b, 2, [], [], run_record("run-b", "another-thread"))
        await store.commit(b, 2, [], [], run_record("run-b", b.thread_id, Phase.WAITING))
        assert [r.run_id for r in await store.list_runs(b.thread_id)] == ["run-a", "run-b"]
        latest = (await store.load(b)).latest_run
        assert latest is not None and latest.run_id == "run-b"
        assert await store.get_run("missing") is None

    async def test_state_equals_replay_of_the_committed_log(self, store: FullStore) -> None:
        import random

        rng = random.Random(7)
        b = binding()
        version = 0
        for i in range(40):
            key = rng.choice(["a", "b", "c"])
            roll = rng.random()
            if roll < 0.2:
                cmd = Command.remove(key)
            elif roll < 0.6:
                value = {f"f{rng.randrange(5)}": rng.randrange(100)}
                cmd = Command.set(key, value, merge=MergePolicy.COMMUTATIVE)
            else:
                cmd = Command.set(key, rng.choice([1, "x", [i], {"z": i}, None]))
            version = await store.commit(b, version, [], [batch(cmd, revision=i + 1)])
        snap = await store.load(b)
        log = (await store.read_batches(b.thread_id, limit=1000)).items
        assert len(log) == 40
        expected = replay(log).to_dict()
        assert canonical(sorted(snap.state.items())) == canonical(sorted(expected.items()))
