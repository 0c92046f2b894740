"""The state engine: commands, the read-only store, and atomic batch commit.

Producers (hooks, gates, tools) never mutate state. They stage :class:`Command`
values; the loop collects every command of one phase into a batch and commits
it with :meth:`StateEngine.commit`, which either applies the whole batch or
nothing. Each committed batch is appended to a revision log so a run's state
can be audited and rebuilt with :func:`replay`.

The store is a plain dict owned by the engine. Readers get a :class:`Store`
view over it instead of a copy: reads are O(1) and a phase never copies state.
The view is stable for the duration of a phase because the loop only commits
at phase boundaries, after every producer of the phase has returned.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from .._errors import StateConflictError, StateValueError
from ._values import unstorable

__all__ = [
    "Command",
    "CommittedBatch",
    "Key",
    "MergePolicy",
    "Remove",
    "Scope",
    "Set",
    "StagedCommand",
    "StateEngine",
    "Store",
    "replay",
]

Key: TypeAlias = str
"""A state address: a plain string, no registration needed."""

_PLAIN = (bool, int, type(None))


def check_value(key: Key, value: Any) -> None:
    """Raise ``StateValueError`` naming ``key`` unless every store can hold ``value``."""
    why = unstorable(value)
    if why is not None:
        raise StateValueError(
            f"state key {key!r}: the value {why}; a state value must be JSON that "
            f"every store reads back as written (see awaken_runtime.state._values) - "
            f"store a flatter, finite, valid-Unicode value"
        )


def check_batches(batches: Iterable[CommittedBatch]) -> None:
    """``check_value`` over every write of ``batches`` (a store's last check before it
    writes anything of a commit)."""
    for batch in batches:
        for _producer, command in batch.entries:
            action = command.action
            if isinstance(action, Set) and not isinstance(action.value, _PLAIN):
                check_value(command.key, action.value)


class Scope(enum.StrEnum):
    """Lifetime of a key. Binding to concrete ids happens at commit."""

    RUN = "run"
    """Lives for one run."""
    THREAD = "thread"
    """Persists with the thread across runs."""
    SHARED = "shared"
    """Persists per shared namespace, across threads and agents."""
    PROFILE = "profile"
    """Persists per profile (user) id, across threads."""


class MergePolicy(enum.StrEnum):
    """How several writes to one ``(scope, key)`` in one batch reconcile."""

    DISJOINT = "disjoint"
    """At most one writer expected; a later write replaces an earlier one."""
    COMMUTATIVE = "commutative"
    """Object values shallow-merge into the current value; others replace."""
    EXCLUSIVE = "exclusive"
    """A second write in one batch is a conflict."""


class Set(BaseModel):
    """Action: write a JSON value."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["set"] = "set"
    value: Any


class Remove(BaseModel):
    """Action: delete the key (for COMMUTATIVE object keys, the whole object)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["remove"] = "remove"


@functools.cache
def _remove() -> Remove:
    # Built on first use, not at import: building a model loads pydantic's plugins.
    return Remove()


class Command(BaseModel):
    """One staged state transition ``{key, scope, merge, action}``."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    key: Key
    scope: Scope = Scope.THREAD
    merge: MergePolicy = MergePolicy.DISJOINT
    action: Set | Remove

    @classmethod
    def set(
        cls,
        key: Key,
        value: Any,
        *,
        scope: Scope = Scope.THREAD,
        merge: MergePolicy = MergePolicy.DISJOINT,
    ) -> Command:
        """A command that writes ``value`` to ``(scope, key)``.

        Raises ``StateValueError`` (naming the key) for a value no store could
        read back as written: too deep, not JSON, a lone surrogate (``_values``).
        """
        if not isinstance(value, _PLAIN):
            check_value(key, value)
        return cls(key=key, scope=scope, merge=merge, action=Set(value=value))

    @classmethod
    def remove(
        cls, key: Key, *, scope: Scope = Scope.THREAD, merge: MergePolicy = MergePolicy.DISJOINT
    ) -> Command:
        """A command that deletes ``(scope, key)``."""
        return cls(key=key, scope=scope, merge=merge, action=_remove())


@dataclass(frozen=True, slots=True)
class StagedCommand:
    """A command together with who staged it (plugin id, tool call id, or ``runtime``)."""

    producer: str
    command: Command


class CommittedBatch(BaseModel):
    """One entry of the revision log: what was committed, by whom, at which revision."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    revision: int
    phase: str
    entries: list[tuple[str, Command]]
    """``(producer, command)`` pairs in the order they were applied."""


StoreKey: TypeAlias = tuple[Scope, Key]


class Store(Mapping[StoreKey, Any]):
    """Read-only view of committed state: ``(scope, key) -> value``.

    Hooks, gates and tools receive this view. It never changes while a phase
    runs; values are the committed JSON data and must not be mutated.
    """

    __slots__ = ("_data", "_log")

    def __init__(self, data: dict[StoreKey, Any], engine: StateEngine | None = None) -> None:
        self._data = data
        # The engine's log, not the engine: the engine keeps this view, and a reference
        # back would make a reference cycle of every run's state.
        self._log: list[CommittedBatch] | None = engine.log if engine is not None else None

    def get_value(self, key: Key, scope: Scope = Scope.THREAD, default: Any = None) -> Any:
        """The committed value of ``(scope, key)``, or ``default``."""
        return self._data.get((scope, key), default)

    def __getitem__(self, item: StoreKey) -> Any:
        return self._data[item]

    def __contains__(self, item: object) -> bool:
        return item in self._data

    def __iter__(self) -> Iterator[StoreKey]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    @property
    def revision(self) -> int:
        """Number of batches committed so far (0 for a store built from data)."""
        return len(self._log) if self._log is not None else 0

    def scope_items(self, scope: Scope) -> dict[Key, Any]:
        """A new dict of every key in one scope (O(store size): not for hot paths)."""
        return {k: v for (s, k), v in self._data.items() if s is scope}

    def to_dict(self) -> dict[StoreKey, Any]:
        """A shallow copy of the whole store."""
        return dict(self._data)


def apply_command(data: dict[StoreKey, Any], command: Command) -> None:
    """Apply one command to ``data`` under its merge policy (no conflict checks)."""
    slot = (command.scope, command.key)
    action = command.action
    if isinstance(action, Remove):
        data.pop(slot, None)
        return
    value = action.value
    if command.merge is MergePolicy.COMMUTATIVE and isinstance(value, dict):
        current = data.get(slot)
        if isinstance(current, dict):
            merged = dict(current)
            merged.update(value)
            data[slot] = merged
            return
    data[slot] = value


@dataclass(slots=True)
class StateEngine:
    """Owns the committed state of one run and its revision log.

    ``commit`` validates a whole batch before touching anything, so a batch
    that conflicts (or that a validator rejects) commits nothing.
    """

    data: dict[StoreKey, Any] = field(default_factory=dict)
    log: list[CommittedBatch] = field(default_factory=list)
    _store: Store | None = None

    @property
    def revision(self) -> int:
        """Number of batches committed."""
        return len(self.log)

    @property
    def store(self) -> Store:
        """The read-only view over the committed state (the same object every time)."""
        if self._store is None:
            self._store = Store(self.data, self)
        return self._store

    def commit(self, phase: str, batch: Iterable[StagedCommand]) -> CommittedBatch | None:
        """Apply ``batch`` atomically; return the log entry, or ``None`` if empty.

        Raises :class:`StateConflictError` when two writes to one EXCLUSIVE key,
        or writes with different merge policies to one key, meet in the batch.
        Nothing is applied in that case.
        """
        staged = list(batch)
        if not staged:
            return None
        if len(staged) > 1:
            check_conflicts(staged)
        for entry in staged:
            apply_command(self.data, entry.command)
        committed = CommittedBatch(
            revision=len(self.log) + 1,
            phase=phase,
            entries=[(entry.producer, entry.command) for entry in staged],
        )
        self.log.append(committed)
        return committed


def check_conflicts(staged: list[StagedCommand]) -> None:
    """Raise :class:`StateConflictError` if the batch breaks a merge policy."""
    seen: dict[StoreKey, StagedCommand] = {}
    for entry in staged:
        command = entry.command
        slot = (command.scope, command.key)
        first = seen.get(slot)
        if first is None:
            seen[slot] = entry
            continue
        if MergePolicy.EXCLUSIVE in (first.command.merge, command.merge):
            reason = "key is EXCLUSIVE and was written twice in one batch"
        elif first.command.merge is not command.merge:
            reason = (
                f"writes use different merge policies "
                f"({first.command.merge.value} and {command.merge.value})"
            )
        else:
            continue
        raise StateConflictError(
            key=command.key,
            scope=command.scope.value,
            producers=(first.producer, entry.producer),
            reason=reason,
        )


def replay(
    batches: Iterable[CommittedBatch], initial: Mapping[StoreKey, Any] | None = None
) -> Store:
    """Rebuild a store by applying committed batches in order to ``initial``."""
    data: dict[StoreKey, Any] = dict(initial or {})
    for batch in batches:
        for _producer, command in batch.entries:
            apply_command(data, command)
    return Store(data)
