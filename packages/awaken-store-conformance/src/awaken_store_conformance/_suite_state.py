"""Conformance: field-wise COMMUTATIVE persistence, value fidelity, profile/shared scopes."""

from __future__ import annotations

from awaken_runtime import Command, ContentPart, MergePolicy, Message, Scope, ToolCall
from awaken_runtime.stores import FullStore

from ._helpers import batch, binding, canonical

__all__ = ["StateSuite"]

C = MergePolicy.COMMUTATIVE
WEIRD = 'héllo ✓ 漢字 🚀 \u2028 \u2029 \x00 " \\ \n\t end'


class StateSuite:
    """How state values are persisted. Needs a ``store`` fixture."""

    async def test_commutative_object_keys_merge_field_by_field(self, store: FullStore) -> None:
        b = binding()
        await store.commit(b, 0, [], [batch(Command.set("mem", {"a": 1, "b": {"x": 1}}, merge=C))])
        await store.commit(b, 1, [], [batch(Command.set("mem", {"b": {"y": 2}, "c": 3}, merge=C))])
        snap = await store.load(b)
        value = snap.state[(Scope.THREAD, "mem")]
        assert canonical(value) == canonical({"a": 1, "b": {"y": 2}, "c": 3})  # shallow, ordered

    async def test_a_plain_set_replaces_the_whole_object(self, store: FullStore) -> None:
        b = binding()
        await store.commit(b, 0, [], [batch(Command.set("mem", {"a": 1, "b": 2}, merge=C))])
        await store.commit(b, 1, [], [batch(Command.set("mem", {"z": 0}))])
        assert (await store.load(b)).state[(Scope.THREAD, "mem")] == {"z": 0}
        await store.commit(b, 2, [], [batch(Command.set("mem", {"y": 1}, merge=C))])
        assert (await store.load(b)).state[(Scope.THREAD, "mem")] == {"z": 0, "y": 1}
        await store.commit(b, 3, [], [batch(Command.set("mem", 5, merge=C))])
        assert (await store.load(b)).state[(Scope.THREAD, "mem")] == 5
        await store.commit(b, 4, [], [batch(Command.set("mem", {"q": 1}, merge=C))])
        assert (await store.load(b)).state[(Scope.THREAD, "mem")] == {"q": 1}
        await store.commit(b, 5, [], [batch(Command.remove("mem", merge=C))])
        assert (Scope.THREAD, "mem") not in (await store.load(b)).state
        await store.commit(b, 6, [], [batch(Command.set("mem", {"n": 1}, merge=C))])
        assert (await store.load(b)).state[(Scope.THREAD, "mem")] == {"n": 1}

    async def test_merging_one_field_into_a_large_object(self, store: FullStore) -> None:
        b = binding()
        big = {f"k{i}": i for i in range(20_000)}
        await store.commit(b, 0, [], [batch(Command.set("big", big, merge=C))])
        await store.commit(b, 1, [], [batch(Command.set("big", {"k5": -5, "new": 1}, merge=C))])
        value = (await store.load(b)).state[(Scope.THREAD, "big")]
        assert len(value) == 20_001 and value["k5"] == -5 and value["new"] == 1
        assert list(value)[-1] == "new" and list(value)[5] == "k5"

    async def test_empty_object_and_empty_values_round_trip(self, store: FullStore) -> None:
        b = binding()
        values = {"o": {}, "l": [], "s": "", "z": 0, "n": None, "f": False, "x": 1.5}
        cmds = [
            Command.set(k, v, merge=C if k == "o" else MergePolicy.DISJOINT)
            for k, v in values.items()
        ]
        await store.commit(b, 0, [Message.user(""), Message(role="assistant")], [batch(*cmds)])
        snap = await store.load(b)
        assert {k: snap.state[(Scope.THREAD, k)] for k in values} == values
        assert canonical([snap.state[(Scope.THREAD, k)] for k in values]) == canonical(
            list(values.values())
        )
        assert snap.messages[0].content == "" and snap.messages[1].content is None

    async def test_unicode_round_trips_byte_for_byte(self, store: FullStore) -> None:
        b = binding(f"thread {WEIRD[:12]}/with/slashes", f"prof {WEIRD[:8]}", "ns ✓")
        call = ToolCall(id="c-✓", name="t", arguments={WEIRD: [WEIRD, {"🚀": None}]})
        msgs = [
            Message.user(WEIRD, id=f"id-{WEIRD[:5]}", metadata={WEIRD: WEIRD}),
            Message.assistant(None, tool_calls=[call]),
            Message.tool("c-✓", WEIRD),
            Message(role="user", content=[ContentPart(type="text", text=WEIRD)]),
        ]
        cmds = [
            Command.set(WEIRD, {WEIRD: WEIRD}, merge=C),
            Command.set("p" + WEIRD, WEIRD, scope=Scope.PROFILE),
        ]
        await store.commit(b, 0, msgs, [batch(*cmds)])
        snap = await store.load(b)
        assert [m.model_dump_json() for m in snap.messages] == [m.model_dump_json() for m in msgs]
        assert canonical(snap.state[(Scope.THREAD, WEIRD)]) == canonical({WEIRD: WEIRD})
        assert snap.state[(Scope.PROFILE, "p" + WEIRD)] == WEIRD
        info = [t for t in await store.list_threads(limit=10_000) if t.thread_id == b.thread_id]
        assert len(info) == 1

    async def test_large_values_round_trip(self, store: FullStore) -> None:
        b = binding()
        text = ("0123456789abcdef✓" * 640_000)[: 10 * 1024 * 1024]
        await store.commit(b, 0, [Message.user(text)], [batch(Command.set("blob", text))])
        await store.commit(b, 1, [], [batch(Command.set("obj", {"blob": text}, merge=C))])
        snap = await store.load(b)
        assert snap.messages[0].content == text
        assert snap.state[(Scope.THREAD, "blob")] == text
        assert snap.state[(Scope.THREAD, "obj")]["blob"] == text

    async def test_profile_store_reads_and_writes_scopes(self, store: FullStore) -> None:
        b = binding(None, "alice", "team")
        await store.commit(
            b, 0, [], [batch(Command.set("pref", {"a": 1}, scope=Scope.PROFILE, merge=C))]
        )
        await store.write_scope(
            Scope.PROFILE, "alice", [Command.set("pref", {"b": 2}, scope=Scope.PROFILE, merge=C)]
        )
        await store.write_scope(Scope.SHARED, "team", [Command.set("doc", "v1")])
        assert await store.read_scope(Scope.PROFILE, "alice") == {"pref": {"a": 1, "b": 2}}
        assert await store.read_scope(Scope.SHARED, "team") == {"doc": "v1"}
        assert await store.read_scope(Scope.PROFILE, "bob") == {}
        other = await store.load(binding(None, "alice", "team"))
        assert other.state[(Scope.PROFILE, "pref")] == {"a": 1, "b": 2}
        await store.write_scope(Scope.SHARED, "team", [Command.remove("doc")])
        assert await store.read_scope(Scope.SHARED, "team") == {}
