"""Conformance at the edges (issue 51): fenced commits, and state that reads back as written.

- A commit made under a lease the thread no longer holds (taken by another
  holder, or released) raises ``LeaseFenced`` and writes nothing.
- A store never accepts what it cannot read back: over generated values
  (nesting up to several times the limit, long strings, every Unicode plane,
  lone surrogates, non-finite numbers), a commit either refuses the value with
  ``StateValueError`` naming the key, writing nothing, or loads it and reads its
  batch back equal. A JSON value within the documented limits is accepted.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awaken_runtime import Command, LeaseFenced, Message, Scope, Set, StateValueError
from awaken_runtime.stores import FullStore

from ._helpers import batch, binding, canonical

__all__ = ["EdgeSuite"]

LIMIT = 64
"""The documented nesting limit of a state value (``awaken_runtime.state._values``)."""

_text = st.text(st.characters(codec="utf-8"), max_size=40)
_weird = st.sampled_from(["\ud800", "a\udfffb", "\x00", "\u2028", "🚀", "\ufeff", ""])
_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    _text,
    _weird,
)


def _nest(depth: int, inner: Any, as_object: bool) -> Any:
    value = inner
    for level in range(depth):
        value = {"k": value} if as_object and level % 2 == 0 else [value]
    return value


_values = st.one_of(
    st.recursive(
        _leaf,
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_text | _weird, kids, max_size=4),
        max_leaves=24,
    ),
    st.builds(_nest, st.integers(1, 4 * LIMIT), _leaf, st.booleans()),
    st.integers(0, 300_000).map(lambda n: "é" * n),
)


def _json_within_limits(value: Any, depth: int = 1) -> bool:
    """Whether ``value`` is plain JSON a store must accept (the strategy's good cases)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return depth <= LIMIT and all(_json_within_limits(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return depth <= LIMIT and all(
            _json_within_limits(k) and _json_within_limits(v, depth + 1) for k, v in value.items()
        )
    return True


class EdgeSuite:
    """Fenced commits and state fidelity. Needs a ``store`` fixture."""

    async def test_a_commit_under_a_lease_that_was_taken_writes_nothing(
        self, store: FullStore
    ) -> None:
        b = binding()
        lease = await store.acquire_lease(b.thread_id, "h1", 0.2)
        version = await store.commit(b, 0, [Message.user("mine")], [], lease=lease)
        await asyncio.sleep(0.3)  # it lapses; another holder takes the thread
        taken = await store.acquire_lease(b.thread_id, "h2", 30)
        with pytest.raises(LeaseFenced) as info:
            await store.commit(b, version, [Message.user("late")], [], lease=lease)
        assert info.value.thread_id == b.thread_id and "h1" in str(info.value)
        snap = await store.load(b)
        assert snap.version == version and [m.text for m in snap.messages] == ["mine"]
        version = await store.commit(b, version, [Message.user("theirs")], [], lease=taken)
        await store.release_lease(taken)
        with pytest.raises(LeaseFenced):  # a released lease holds nothing either
            await store.commit(b, version, [Message.user("after")], [], lease=taken)
        assert [m.text for m in (await store.load(b)).messages] == ["mine", "theirs"]

    @settings(
        max_examples=40,
        deadline=None,
        # One method, a subclass per backend: each runs it on its own instance.
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,
        ],
    )
    @given(value=_values)
    async def test_a_state_value_is_refused_or_read_back_as_written(
        self, store: FullStore, value: Any
    ) -> None:
        b = binding()
        # Built without Command.set's own check: the store must refuse on its own.
        command = Command(key="v", scope=Scope.THREAD, action=Set(value=value))
        try:
            await store.commit(b, 0, [Message.user("x")], [batch(command)])
        except StateValueError as exc:
            assert "'v'" in str(exc), exc
            assert not _json_within_limits(value), f"refused a plain JSON value: {exc}"
            snap = await store.load(b)
            assert snap.version == 0 and not snap.messages, "a refused commit wrote something"
            with pytest.raises(StateValueError):
                Command.set("v", value)
            return
        assert _json_within_limits(value), "accepted a value JSON cannot hold as written"
        snap = await store.load(b)
        assert canonical(snap.state[(Scope.THREAD, "v")]) == canonical(value)
        page = await store.read_batches(b.thread_id)
        ((_producer, stored),) = page.items[0].entries
        assert isinstance(stored.action, Set)
        assert canonical(stored.action.value) == canonical(value)
