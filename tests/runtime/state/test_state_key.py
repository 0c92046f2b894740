"""Typed state keys: StateKey[T] and FoldStateKey[T, U]."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from awaken_runtime import (
    Command,
    FoldStateKey,
    MergePolicy,
    Remove,
    Scope,
    Set,
    StateEngine,
    StateKey,
    StateValueError,
    Store,
)
from awaken_runtime.state._engine import StagedCommand


class Profile(BaseModel):
    name: str
    joined: datetime
    tags: list[str] = []


def commit(engine: StateEngine, *commands: Command) -> None:
    engine.commit("test", [StagedCommand("test", c) for c in commands])


# --- StateKey.get ----------------------------------------------------------


def test_get_returns_default_when_absent() -> None:
    key = StateKey("count", int, default=0)
    assert key.get(Store({})) == 0


def test_get_without_default_raises_naming_key() -> None:
    key = StateKey("count", int, scope=Scope.RUN)
    with pytest.raises(StateValueError, match=r"run:'count'.*no value and no default"):
        key.get(Store({}))


def test_get_reads_only_its_own_scope() -> None:
    engine = StateEngine()
    commit(engine, Command.set("count", 5, scope=Scope.THREAD))
    assert StateKey("count", int, default=0, scope=Scope.RUN).get(engine.store) == 0
    assert StateKey("count", int, default=0, scope=Scope.THREAD).get(engine.store) == 5


def test_get_validates_stored_value() -> None:
    engine = StateEngine()
    commit(engine, Command.set("count", "not a number"))
    key = StateKey("count", int, default=0)
    with pytest.raises(StateValueError) as info:
        key.get(engine.store)
    message = str(info.value)
    assert "'count'" in message
    assert "stored" in message
    assert "valid integer" in message


def test_get_default_is_not_shared_between_reads() -> None:
    """Mutating what ``get`` returned for an absent key must not change the default.

    Read-modify-write (``v = K.get(store); v.append(x); K.set(v)``) is the common
    pattern; if the default object is handed out, state leaks into every later
    read of an absent key (other threads, other runs).
    """
    key = StateKey("items", list[str], default=[])
    empty = Store({})
    first = key.get(empty)
    first.append("leaked")
    assert key.get(empty) == []


# --- StateKey.set / remove ---------------------------------------------------


def test_set_produces_command_with_key_scope_and_merge() -> None:
    key = StateKey("prefs", dict[str, int], scope=Scope.PROFILE, merge=MergePolicy.COMMUTATIVE)
    cmd = key.set({"a": 1})
    assert cmd.key == "prefs"
    assert cmd.scope is Scope.PROFILE
    assert cmd.merge is MergePolicy.COMMUTATIVE
    assert cmd.action == Set(value={"a": 1})


def test_set_validates_and_names_key_and_reason() -> None:
    key = StateKey("count", int, scope=Scope.RUN)
    with pytest.raises(StateValueError) as info:
        key.set("many")  # type: ignore[arg-type]
    message = str(info.value)
    assert "run:'count'" in message
    assert "int" in message
    assert "valid integer" in message


def test_set_names_nested_field_of_model_value() -> None:
    key = StateKey("profile", Profile)
    with pytest.raises(StateValueError, match="joined"):
        key.set({"name": "ann", "joined": "yesterday-ish"})  # type: ignore[arg-type]


def test_remove_produces_remove_command_in_same_scope() -> None:
    key = StateKey("count", int, scope=Scope.SHARED, merge=MergePolicy.EXCLUSIVE)
    cmd = key.remove()
    assert isinstance(cmd.action, Remove)
    assert (cmd.key, cmd.scope, cmd.merge) == ("count", Scope.SHARED, MergePolicy.EXCLUSIVE)
    engine = StateEngine()
    commit(engine, key.set(3))
    commit(engine, cmd)
    assert StateKey("count", int, default=-1, scope=Scope.SHARED).get(engine.store) == -1


def test_pydantic_model_round_trips_through_json_data() -> None:
    key = StateKey("profile", Profile)
    value = Profile(name="ann", joined=datetime(2024, 5, 1, 12, 0, tzinfo=UTC), tags=["x"])
    cmd = key.set(value)
    assert isinstance(cmd.action, Set)
    stored = cmd.action.value
    # The command carries plain JSON data, never the model object.
    assert isinstance(stored, dict)
    assert json.loads(json.dumps(stored)) == stored
    assert stored["joined"].startswith("2024-05-01T12:00:00")
    engine = StateEngine()
    commit(engine, cmd)
    got = key.get(engine.store)
    assert isinstance(got, Profile)
    assert got == value


def test_list_of_models_round_trip() -> None:
    key = StateKey("people", list[Profile], default=[])
    people = [Profile(name=n, joined=datetime(2020, 1, 1, tzinfo=UTC)) for n in "ab"]
    engine = StateEngine()
    commit(engine, key.set(people))
    assert key.get(engine.store) == people


# --- FoldStateKey ----------------------------------------------------------


def test_fold_counter() -> None:
    counter: FoldStateKey[int, int] = FoldStateKey(
        "count", int, int, lambda cur, n: cur + n, default=0
    )
    engine = StateEngine()
    commit(engine, counter.update(engine.store, 5))
    commit(engine, counter.update(engine.store, 2))
    assert counter.get(engine.store) == 7
    assert engine.store.get_value("count") == 7


def test_fold_list_append() -> None:
    log: FoldStateKey[list[str], str] = FoldStateKey(
        "log", list[str], str, lambda cur, item: [*cur, item], default=[], scope=Scope.RUN
    )
    engine = StateEngine()
    for item in ["a", "b", "c"]:
        commit(engine, log.update(engine.store, item))
    assert log.get(engine.store) == ["a", "b", "c"]


def test_fold_update_command_uses_key_scope_and_merge() -> None:
    key: FoldStateKey[int, int] = FoldStateKey(
        "n", int, int, max, default=0, scope=Scope.PROFILE, merge=MergePolicy.EXCLUSIVE
    )
    cmd = key.update(Store({}), 3)
    assert (cmd.key, cmd.scope, cmd.merge) == ("n", Scope.PROFILE, MergePolicy.EXCLUSIVE)
    assert cmd.action == Set(value=3)


def test_fold_rejects_bad_update_naming_key() -> None:
    counter: FoldStateKey[int, int] = FoldStateKey(
        "count", int, int, lambda cur, n: cur + n, default=0
    )
    with pytest.raises(StateValueError) as info:
        counter.update(Store({}), "lots")  # type: ignore[arg-type]
    assert "'count'" in str(info.value)
    assert "update" in str(info.value)


def test_fold_result_is_validated() -> None:
    broken: FoldStateKey[int, int] = FoldStateKey(
        "count",
        int,
        int,
        lambda cur, n: "oops",  # type: ignore[arg-type,return-value]
        default=0,
    )
    with pytest.raises(StateValueError, match="'count'"):
        broken.update(Store({}), 1)


def test_fold_without_default_on_absent_key_raises() -> None:
    counter: FoldStateKey[int, int] = FoldStateKey("count", int, int, lambda cur, n: cur + n)
    with pytest.raises(StateValueError, match="no default"):
        counter.update(Store({}), 1)


def test_fold_with_model_update() -> None:
    class Bump(BaseModel):
        by: int

    key: FoldStateKey[int, Bump] = FoldStateKey(
        "n", int, Bump, lambda cur, u: cur + u.by, default=10
    )
    assert key.update(Store({}), {"by": 5}).action == Set(value=15)  # type: ignore[arg-type]
