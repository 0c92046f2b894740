"""Typed views over state keys: ``StateKey[T]`` and ``FoldStateKey[T, U]``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from .._errors import StateValueError
from ._engine import Command, Key, MergePolicy, Scope, Store

__all__ = ["FoldStateKey", "StateKey"]

T = TypeVar("T")
U = TypeVar("U")

_MISSING: Any = object()


class StateKeyDecl(BaseModel):
    """A ``(scope, key)`` a plugin may write (see ``CapabilityBound.state_keys``)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    key: Key
    scope: Scope = Scope.THREAD

    def __str__(self) -> str:
        return f"{self.scope.value}:{self.key}"


class StateKey(Generic[T]):
    """A key with a fixed scope, merge policy and value type.

    It produces ordinary :class:`Command` values; the type is checked with a
    pydantic ``TypeAdapter`` both when writing (``set``) and reading (``get``).

    >>> counter = StateKey("counter", int, default=0, scope=Scope.RUN)
    >>> cmd = counter.set(3)
    """

    __slots__ = ("_adapter", "default", "key", "merge", "scope", "value_type")

    def __init__(
        self,
        key: Key,
        value_type: Any,
        *,
        default: T = _MISSING,
        scope: Scope = Scope.THREAD,
        merge: MergePolicy = MergePolicy.DISJOINT,
    ) -> None:
        self.key = key
        self.value_type = value_type
        self.default = default
        self.scope = scope
        self.merge = merge
        self._adapter: TypeAdapter[T] = TypeAdapter(value_type)

    def __repr__(self) -> str:
        return f"StateKey({self.key!r}, scope={self.scope.value}, merge={self.merge.value})"

    def _validate(self, value: Any, where: str) -> T:
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}"
                for err in exc.errors()
            )
            raise StateValueError(
                f"{where} {self.scope.value}:{self.key!r} does not match "
                f"{self._type_name()}: {problems}"
            ) from None

    def _type_name(self) -> str:
        return getattr(self.value_type, "__name__", repr(self.value_type))

    @property
    def decl(self) -> StateKeyDecl:
        """This key's ``(scope, key)`` declaration, for a ``CapabilityBound``."""
        return StateKeyDecl(key=self.key, scope=self.scope)

    def get(self, store: Store) -> T:
        """The typed value, or the default when the key is absent.

        Raises :class:`StateValueError` if absent with no default, or if the
        stored value does not match the declared type.
        """
        raw = store.get_value(self.key, self.scope, _MISSING)
        if raw is _MISSING:
            if self.default is _MISSING:
                raise StateValueError(
                    f"state key {self.scope.value}:{self.key!r} has no value and no default; "
                    f"pass default= when declaring the StateKey"
                )
            # A copy: callers may modify what they read (read-modify-write).
            return copy.deepcopy(self.default)
        return self._validate(raw, "stored value of")

    def set(self, value: T) -> Command:
        """A command writing ``value`` (validated and serialized to JSON data)."""
        typed = self._validate(value, "value for")
        return Command.set(
            self.key,
            self._adapter.dump_python(typed, mode="json"),
            scope=self.scope,
            merge=self.merge,
        )

    def remove(self) -> Command:
        """A command deleting the key."""
        return Command.remove(self.key, scope=self.scope, merge=self.merge)


class FoldStateKey(StateKey[T], Generic[T, U]):
    """A typed key updated through a pure ``fold(current, update) -> new``.

    ``update(store, u)`` reads the current value, folds ``u`` into it and
    returns a ``Set`` command with the result, so producers describe *what
    changed* and the fold decides the new value deterministically.
    """

    __slots__ = ("_update_adapter", "fold", "update_type")

    def __init__(
        self,
        key: Key,
        value_type: Any,
        update_type: Any,
        fold: Callable[[T, U], T],
        *,
        default: T = _MISSING,
        scope: Scope = Scope.THREAD,
        merge: MergePolicy = MergePolicy.DISJOINT,
    ) -> None:
        super().__init__(key, value_type, default=default, scope=scope, merge=merge)
        self.update_type = update_type
        self.fold = fold
        self._update_adapter: TypeAdapter[U] = TypeAdapter(update_type)

    def update(self, store: Store, update: U) -> Command:
        """Fold ``update`` into the current value and return the write."""
        try:
            typed_update = self._update_adapter.validate_python(update)
        except ValidationError as exc:
            raise StateValueError(
                f"update for {self.scope.value}:{self.key!r} does not match "
                f"{getattr(self.update_type, '__name__', self.update_type)!s}: "
                f"{exc.errors()[0]['msg']}"
            ) from None
        return self.set(self.fold(self.get(store), typed_update))
