"""State engine: merge policies, atomic commit, scopes, revision log, replay, read-only store."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_runtime import (
    Command,
    CommittedBatch,
    MergePolicy,
    Remove,
    Scope,
    Set,
    StateConflictError,
    StateEngine,
    Store,
    replay,
)
from awaken_runtime.state._engine import StagedCommand

T = Scope.THREAD


def staged(producer: str, command: Command) -> StagedCommand:
    return StagedCommand(producer, command)


def commit(engine: StateEngine, *entries: tuple[str, Command], phase: str = "step") -> Any:
    return engine.commit(phase, [staged(p, c) for p, c in entries])


# --- DISJOINT --------------------------------------------------------------


def test_disjoint_later_write_in_one_batch_replaces_earlier() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", 1)), ("b", Command.set("k", 2)))
    assert engine.store.get_value("k") == 2


def test_disjoint_write_in_later_batch_replaces_committed_value() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", {"x": 1})))
    commit(engine, ("a", Command.set("k", {"y": 2})))
    # DISJOINT never merges, even for objects.
    assert engine.store.get_value("k") == {"y": 2}


# --- COMMUTATIVE -----------------------------------------------------------


def cset(key: str, value: Any, scope: Scope = T) -> Command:
    return Command.set(key, value, scope=scope, merge=MergePolicy.COMMUTATIVE)


def test_commutative_objects_shallow_merge_within_one_batch() -> None:
    engine = StateEngine()
    commit(engine, ("a", cset("k", {"x": 1, "y": 1})), ("b", cset("k", {"y": 2, "z": 3})))
    assert engine.store.get_value("k") == {"x": 1, "y": 2, "z": 3}


def test_commutative_object_merges_into_committed_value() -> None:
    engine = StateEngine()
    commit(engine, ("a", cset("k", {"x": 1})))
    commit(engine, ("b", cset("k", {"y": 2})))
    assert engine.store.get_value("k") == {"x": 1, "y": 2}


def test_commutative_merge_is_shallow_nested_objects_are_replaced() -> None:
    engine = StateEngine()
    commit(engine, ("a", cset("k", {"n": {"p": 1}, "keep": True})))
    commit(engine, ("b", cset("k", {"n": {"q": 2}})))
    assert engine.store.get_value("k") == {"n": {"q": 2}, "keep": True}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([1, 2], [3]),  # lists are not objects: replace, not concatenate
        (5, 6),
        ("a", "b"),
        ({"x": 1}, [1]),  # object replaced by non-object
        ([1], {"x": 1}),  # non-object replaced by object
        ({"x": 1}, None),
    ],
)
def test_commutative_non_objects_replace(first: Any, second: Any) -> None:
    engine = StateEngine()
    commit(engine, ("a", cset("k", first)))
    commit(engine, ("b", cset("k", second)))
    assert engine.store.get_value("k") == second


def test_commutative_merge_does_not_mutate_previously_read_value() -> None:
    engine = StateEngine()
    commit(engine, ("a", cset("k", {"x": 1})))
    before = engine.store.get_value("k")
    commit(engine, ("b", cset("k", {"y": 2})))
    assert before == {"x": 1}
    assert engine.store.get_value("k") == {"x": 1, "y": 2}


def test_commutative_merge_does_not_mutate_logged_command_values() -> None:
    engine = StateEngine()
    first = {"x": 1}
    commit(engine, ("a", cset("k", first)))
    commit(engine, ("b", cset("k", {"y": 2})))
    assert first == {"x": 1}
    assert engine.log[0].entries[0][1].action == Set(value={"x": 1})


# --- EXCLUSIVE -------------------------------------------------------------


def xset(key: str, value: Any, scope: Scope = T) -> Command:
    return Command.set(key, value, scope=scope, merge=MergePolicy.EXCLUSIVE)


def test_exclusive_double_write_raises_naming_key_and_both_producers() -> None:
    engine = StateEngine()
    with pytest.raises(StateConflictError) as info:
        commit(engine, ("plugin-a", xset("lock", 1)), ("call_42", xset("lock", 2)))
    err = info.value
    assert err.key == "lock"
    assert err.scope == "thread"
    assert err.producers == ("plugin-a", "call_42")
    message = str(err)
    assert "'lock'" in message
    assert "plugin-a" in message
    assert "call_42" in message


def test_exclusive_set_and_remove_in_one_batch_conflict() -> None:
    engine = StateEngine()
    remove = Command.remove("lock", merge=MergePolicy.EXCLUSIVE)
    with pytest.raises(StateConflictError) as info:
        commit(engine, ("a", xset("lock", 1)), ("b", remove))
    assert info.value.producers == ("a", "b")


def test_exclusive_single_write_per_batch_is_fine_across_batches() -> None:
    engine = StateEngine()
    commit(engine, ("a", xset("lock", 1)))
    commit(engine, ("b", xset("lock", 2)))
    assert engine.store.get_value("lock") == 2


def test_exclusive_same_key_in_different_scopes_does_not_conflict() -> None:
    engine = StateEngine()
    commit(engine, ("a", xset("lock", 1, Scope.RUN)), ("b", xset("lock", 2, Scope.THREAD)))
    assert engine.store.get_value("lock", Scope.RUN) == 1
    assert engine.store.get_value("lock", Scope.THREAD) == 2


def test_exclusive_conflict_with_a_third_writer_names_first_writer() -> None:
    engine = StateEngine()
    other = Command.set("other", 1)
    with pytest.raises(StateConflictError) as info:
        commit(engine, ("a", xset("lock", 1)), ("b", other), ("c", xset("lock", 3)))
    assert info.value.producers == ("a", "c")


# --- mixed policies --------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (MergePolicy.DISJOINT, MergePolicy.COMMUTATIVE),
        (MergePolicy.COMMUTATIVE, MergePolicy.DISJOINT),
        (MergePolicy.DISJOINT, MergePolicy.EXCLUSIVE),
        (MergePolicy.EXCLUSIVE, MergePolicy.COMMUTATIVE),
    ],
)
def test_mixed_merge_policies_on_one_key_conflict(first: MergePolicy, second: MergePolicy) -> None:
    engine = StateEngine()
    with pytest.raises(StateConflictError) as info:
        commit(
            engine,
            ("p1", Command.set("k", {"a": 1}, merge=first)),
            ("p2", Command.set("k", {"b": 2}, merge=second)),
        )
    assert info.value.key == "k"
    assert info.value.producers == ("p1", "p2")
    assert engine.store.get_value("k") is None


def test_mixed_policy_message_names_both_policies() -> None:
    engine = StateEngine()
    with pytest.raises(StateConflictError, match="disjoint") as info:
        commit(
            engine,
            ("p1", Command.set("k", 1)),
            ("p2", Command.set("k", 2, merge=MergePolicy.COMMUTATIVE)),
        )
    assert "commutative" in str(info.value)


# --- atomicity -------------------------------------------------------------


def test_conflict_commits_nothing() -> None:
    engine = StateEngine()
    commit(engine, ("setup", Command.set("existing", {"v": 1})), phase="init")
    store_before = engine.store.to_dict()
    log_before = list(engine.log)
    with pytest.raises(StateConflictError):
        commit(
            engine,
            ("a", Command.set("fresh", 1)),  # valid, but must not be applied
            ("a", Command.set("existing", {"v": 2})),  # valid, but must not be applied
            ("a", xset("lock", 1)),
            ("b", xset("lock", 2)),
        )
    assert engine.store.to_dict() == store_before
    assert engine.log == log_before
    assert engine.revision == 1
    assert engine.store.revision == 1
    # The engine is still usable after a rejected batch.
    commit(engine, ("a", Command.set("fresh", 1)))
    assert engine.revision == 2
    assert engine.log[-1].revision == 2


def test_empty_batch_is_not_logged() -> None:
    engine = StateEngine()
    assert engine.commit("step", []) is None
    assert engine.revision == 0
    assert engine.log == []


# --- Remove ----------------------------------------------------------------


def test_remove_deletes_key() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", 1)))
    commit(engine, ("a", Command.remove("k")))
    assert (T, "k") not in engine.store
    assert len(engine.store) == 0
    assert engine.store.get_value("k", default="gone") == "gone"


def test_remove_of_absent_key_is_a_noop() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.remove("never-set")))
    assert len(engine.store) == 0
    assert engine.revision == 1


def test_remove_on_commutative_key_deletes_whole_object() -> None:
    engine = StateEngine()
    commit(engine, ("a", cset("k", {"x": 1, "y": 2})))
    commit(engine, ("a", Command.remove("k", merge=MergePolicy.COMMUTATIVE)))
    assert (T, "k") not in engine.store
    commit(engine, ("a", cset("k", {"z": 3})))
    assert engine.store.get_value("k") == {"z": 3}


def test_remove_then_set_in_one_batch_applies_in_order() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", 1)))
    commit(engine, ("a", Command.remove("k")), ("b", Command.set("k", 2)))
    assert engine.store.get_value("k") == 2


def test_remove_command_shape() -> None:
    cmd = Command.remove("k", scope=Scope.PROFILE)
    assert isinstance(cmd.action, Remove)
    assert cmd.scope is Scope.PROFILE


# --- scopes ----------------------------------------------------------------


def test_same_key_in_every_scope_is_a_separate_entry() -> None:
    engine = StateEngine()
    commit(engine, *[(s.value, Command.set("k", s.value, scope=s)) for s in Scope])
    store = engine.store
    assert len(store) == len(Scope) == 4
    for scope in Scope:
        assert store.get_value("k", scope) == scope.value
        assert store[(scope, "k")] == scope.value
        assert store.scope_items(scope) == {"k": scope.value}


def test_removing_in_one_scope_leaves_other_scopes() -> None:
    engine = StateEngine()
    commit(
        engine,
        ("a", Command.set("k", 1, scope=Scope.RUN)),
        ("a", Command.set("k", 2, scope=Scope.THREAD)),
    )
    commit(engine, ("a", Command.remove("k", scope=Scope.RUN)))
    assert (Scope.RUN, "k") not in engine.store
    assert engine.store.get_value("k", Scope.THREAD) == 2


def test_default_scope_is_thread_and_default_merge_is_disjoint() -> None:
    cmd = Command.set("k", 1)
    assert cmd.scope is Scope.THREAD
    assert cmd.merge is MergePolicy.DISJOINT


# --- revision log ----------------------------------------------------------


def test_log_records_revisions_phases_producers_and_commands_in_order() -> None:
    engine = StateEngine()
    c1 = Command.set("a", 1)
    c2 = cset("b", {"x": 1})
    c3 = Command.remove("a")
    b1 = commit(engine, ("plugin-a", c1), ("call_1", c2), phase="before_inference")
    b2 = commit(engine, ("runtime", c3), phase="after_tool_execute")
    assert isinstance(b1, CommittedBatch)
    assert engine.log == [b1, b2]
    assert [b.revision for b in engine.log] == [1, 2]
    assert [b.phase for b in engine.log] == ["before_inference", "after_tool_execute"]
    assert b1.entries == [("plugin-a", c1), ("call_1", c2)]
    assert b2.entries == [("runtime", c3)]
    assert engine.revision == engine.store.revision == 2


def test_log_round_trips_through_json_and_replays() -> None:
    engine = StateEngine()
    commit(engine, ("a", cset("k", {"x": 1})), ("b", Command.set("n", 3, scope=Scope.RUN)))
    commit(engine, ("a", cset("k", {"y": [1, 2]})), ("c", Command.remove("n", scope=Scope.RUN)))
    restored = [CommittedBatch.model_validate_json(b.model_dump_json()) for b in engine.log]
    assert restored == engine.log
    assert replay(restored) == engine.store


# --- replay ----------------------------------------------------------------


def test_replay_equals_live_store() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", 1)), ("b", cset("obj", {"x": 1})))
    commit(engine, ("a", Command.set("k", 2, scope=Scope.SHARED)), ("b", cset("obj", {"y": 2})))
    commit(engine, ("a", Command.remove("k")))
    rebuilt = replay(engine.log)
    assert isinstance(rebuilt, Store)
    assert rebuilt == engine.store
    assert rebuilt.to_dict() == {
        (Scope.THREAD, "obj"): {"x": 1, "y": 2},
        (Scope.SHARED, "k"): 2,
    }


def test_replay_onto_initial_state() -> None:
    initial = {(T, "obj"): {"x": 1}, (T, "old"): True}
    engine = StateEngine(data=dict(initial))
    commit(engine, ("a", cset("obj", {"y": 2})), ("a", Command.remove("old")))
    assert replay(engine.log, initial) == engine.store
    assert initial == {(T, "obj"): {"x": 1}, (T, "old"): True}  # not mutated


def test_replay_of_prefix_gives_state_at_that_revision() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", 1)))
    snapshot = engine.store.to_dict()
    commit(engine, ("a", Command.set("k", 2)))
    assert replay(engine.log[:1]).to_dict() == snapshot


json_leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=6,
)
KEYS = ["k0", "k1", "k2", "k3"]


@st.composite
def batches(draw: st.DrawFn) -> list[list[StagedCommand]]:
    """Batches that never conflict: one policy per (scope, key), EXCLUSIVE at most once."""
    slots = [(s, k) for s in (Scope.RUN, Scope.THREAD) for k in KEYS]
    policy = {slot: draw(st.sampled_from(list(MergePolicy))) for slot in slots}
    out = []
    for _ in range(draw(st.integers(0, 6))):
        batch = []
        used_exclusive: set[tuple[Scope, str]] = set()
        for _ in range(draw(st.integers(0, 6))):
            slot = draw(st.sampled_from(slots))
            merge = policy[slot]
            if merge is MergePolicy.EXCLUSIVE:
                if slot in used_exclusive:
                    continue
                used_exclusive.add(slot)
            producer = draw(st.sampled_from(["p1", "p2", "call_1"]))
            if draw(st.integers(0, 4)) == 0:
                cmd = Command.remove(slot[1], scope=slot[0], merge=merge)
            else:
                cmd = Command.set(slot[1], draw(json_values), scope=slot[0], merge=merge)
            batch.append(StagedCommand(producer, cmd))
        out.append(batch)
    return out


def reference_apply(data: dict[Any, Any], cmd: Command) -> None:
    slot = (cmd.scope, cmd.key)
    if isinstance(cmd.action, Remove):
        data.pop(slot, None)
        return
    value = cmd.action.value
    current = data.get(slot)
    if (
        cmd.merge is MergePolicy.COMMUTATIVE
        and isinstance(value, dict)
        and isinstance(current, dict)
    ):
        data[slot] = {**current, **value}
    else:
        data[slot] = value


@settings(max_examples=200, deadline=None)
@given(batches())
def test_property_engine_store_equals_replay_of_log(all_batches: list[list[StagedCommand]]) -> None:
    engine = StateEngine()
    expected: dict[Any, Any] = {}
    for i, batch in enumerate(all_batches):
        engine.commit(f"phase-{i}", batch)
        for entry in batch:
            reference_apply(expected, entry.command)
    assert engine.store.to_dict() == expected
    assert replay(engine.log) == engine.store
    assert engine.revision == sum(1 for b in all_batches if b)
    assert [b.revision for b in engine.log] == list(range(1, engine.revision + 1))


@st.composite
def conflicting(draw: st.DrawFn) -> tuple[list[StagedCommand], tuple[Scope, str]]:
    """A batch with exactly one broken rule: a second EXCLUSIVE write (any producer,
    the same one included) or a second write under another merge policy."""
    scope = draw(st.sampled_from([Scope.RUN, Scope.THREAD]))
    key = draw(st.sampled_from(KEYS))
    first_merge = draw(st.sampled_from(list(MergePolicy)))
    if first_merge is MergePolicy.EXCLUSIVE:
        second_merge = draw(st.sampled_from(list(MergePolicy)))
    else:
        second_merge = draw(st.sampled_from([m for m in MergePolicy if m is not first_merge]))
    first_producer = draw(st.sampled_from(["p1", "p2", "call_1"]))
    same = draw(st.booleans())
    second_producer = first_producer if same else draw(st.sampled_from(["p1", "p2", "call_1"]))
    others = [k for k in KEYS if k != key]
    filler = [
        StagedCommand("p3", Command.set(k, draw(json_values), scope=scope))
        for k in draw(st.lists(st.sampled_from(others), unique=True, max_size=3))
    ]
    first = StagedCommand(first_producer, Command.set(key, 1, scope=scope, merge=first_merge))
    if draw(st.booleans()):
        second_cmd = Command.remove(key, scope=scope, merge=second_merge)
    else:
        second_cmd = Command.set(key, 2, scope=scope, merge=second_merge)
    second = StagedCommand(second_producer, second_cmd)
    at = draw(st.integers(0, len(filler)))
    batch = [*filler[:at], first, *filler[at:], second]
    return batch, (scope, key)


@settings(max_examples=200, deadline=None)
@given(batches(), conflicting())
def test_property_conflicting_batch_raises_typed_and_changes_nothing(
    before: list[list[StagedCommand]], bad: tuple[list[StagedCommand], tuple[Scope, str]]
) -> None:
    engine = StateEngine()
    for i, batch in enumerate(before):
        engine.commit(f"phase-{i}", batch)
    store_before, log_before = engine.store.to_dict(), list(engine.log)
    batch, (scope, key) = bad
    with pytest.raises(StateConflictError) as info:
        engine.commit("bad", batch)
    assert (info.value.key, info.value.scope) == (key, scope.value)
    first = next(e for e in batch if (e.command.scope, e.command.key) == (scope, key))
    assert info.value.producers == (first.producer, batch[-1].producer)
    assert engine.store.to_dict() == store_before
    assert engine.log == log_before


def test_exclusive_double_write_by_one_producer_conflicts() -> None:
    engine = StateEngine()
    with pytest.raises(StateConflictError) as info:
        commit(
            engine,
            ("p", Command.set("k", 1, merge=MergePolicy.EXCLUSIVE)),
            ("p", Command.set("k", 2, merge=MergePolicy.EXCLUSIVE)),
        )
    assert info.value.producers == ("p", "p")
    assert engine.store.to_dict() == {} and engine.log == []


# --- Store view ------------------------------------------------------------


def test_store_is_read_only() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", 1)))
    store = engine.store
    assert not hasattr(store, "__setitem__")
    assert not hasattr(store, "__delitem__")
    with pytest.raises(TypeError):
        store[(T, "k")] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        del store[(T, "k")]  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        store.extra = 1  # type: ignore[attr-defined]
    assert store.get_value("k") == 1


def test_store_to_dict_is_a_copy_that_does_not_write_through() -> None:
    engine = StateEngine()
    commit(engine, ("a", Command.set("k", 1)))
    copy = engine.store.to_dict()
    copy[(T, "k")] = 99
    assert engine.store.get_value("k") == 1


def test_store_view_is_the_same_object_and_reflects_commits() -> None:
    engine = StateEngine()
    view = engine.store
    assert engine.store is view
    assert len(view) == 0
    commit(engine, ("a", Command.set("k", [1, 2])))
    assert view.get_value("k") == [1, 2]
    assert view.revision == 1
    assert engine.store is view


def test_store_reads_return_committed_object_without_copying() -> None:
    engine = StateEngine()
    value = {"big": list(range(100))}
    commit(engine, ("a", Command.set("k", value)))
    assert engine.store.get_value("k") is value
    assert engine.store[(T, "k")] is value


def test_store_mapping_protocol_and_defaults() -> None:
    store = Store({(T, "a"): 1, (Scope.RUN, "b"): 2})
    assert set(store) == {(T, "a"), (Scope.RUN, "b")}
    assert (T, "a") in store
    assert (Scope.RUN, "a") not in store
    assert store.get_value("missing") is None
    assert store.get_value("missing", default=0) == 0
    assert store.get_value("b") is None  # default scope is THREAD
    assert store.revision == 0
    with pytest.raises(KeyError):
        store[(T, "missing")]
