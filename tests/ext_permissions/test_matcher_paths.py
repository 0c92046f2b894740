"""Argument paths against hostile JSON: the fast getters agree with a plain walk.

Every JSON shape a model can send (lists where objects were expected, indexes
past the end, keys that are list items) must read as "missing", never as a
crash or as another value.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_permissions._matchers import MISSING, resolve_path, single_getter
from awaken_ext_permissions._model import Segment

_KEYS = st.sampled_from(["a", "b", "k", "0"])
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 3), _KEYS),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=12,
)
segments = st.one_of(_KEYS, st.integers(0, 3), st.none()).map(Segment)


def _walk(value: Any, path: list[Segment]) -> list[Any]:
    """The reference: every value the path reaches, written plainly and recursively."""
    if not path:
        return [value]
    head, rest = path[0], path[1:]
    if head.key is None:
        children = (
            list(value)
            if isinstance(value, list)
            else list(value.values())
            if isinstance(value, dict)
            else []
        )
    elif isinstance(head.key, int):
        ok = isinstance(value, list) and 0 <= head.key < len(value)
        children = [value[head.key]] if ok else []
    else:
        ok = isinstance(value, dict) and head.key in value
        children = [value[head.key]] if ok else []
    return [found for child in children for found in _walk(child, rest)]


@settings(max_examples=500, deadline=None)
@given(args=json_values, path=st.lists(segments, min_size=1, max_size=4))
def test_resolve_path_reaches_exactly_what_a_plain_walk_reaches(
    args: Any, path: list[Segment]
) -> None:
    assert resolve_path(args, tuple(path)) == _walk(args, path)


@settings(max_examples=500, deadline=None)
@given(args=json_values, path=st.lists(segments, min_size=1, max_size=4))
def test_single_getter_reads_the_one_value_or_missing(args: Any, path: list[Segment]) -> None:
    plain = [s for s in path if s.key is not None]
    if not plain:
        return
    found = _walk(args, plain)
    assert len(found) <= 1
    got = single_getter(tuple(plain))(args)
    if found:
        assert got is not MISSING and got == found[0]
    else:
        assert got is MISSING
    raw = tuple(s.key for s in plain)
    assert single_getter(raw)(args) is got or single_getter(raw)(args) == got


def test_the_shapes_a_model_can_send_instead() -> None:
    at = (Segment("a"), Segment(0))
    assert resolve_path({"a": {"k": 1}}, at) == []  # an object where a list was expected
    assert resolve_path({"a": ["x", "y"]}, (Segment("a"), Segment(2))) == []  # past the end
    assert resolve_path({"a": ["k"]}, (Segment("a"), Segment("k"))) == []  # a key in a list
    assert resolve_path({"a": {"b": 1, "c": 2}}, (Segment("a"), Segment("b"))) == [1]
    assert resolve_path({"a": 5}, (Segment("a"), Segment(None))) == []
    assert resolve_path({"a": {"x": 1, "y": [2]}}, (Segment("a"), Segment(None))) == [1, [2]]
    assert single_getter(at)({"a": {"k": 1}}) is MISSING
    assert single_getter(("a",))(["a"]) is MISSING
    assert single_getter(("a", "b"))({"a": {"b": None}}) is None
