"""Edges of the safe default the generated tests reach rarely (found by the mutation run)."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_ext_permissions import explain
from awaken_ext_permissions._matchers import strict_equal
from awaken_ext_permissions._vouch import normalized_paths, plain


def test_every_unnormal_argument_is_normalized_not_only_the_last() -> None:
    args = {"a": "x/./y", "n": 1, "b": "p//q", "c": ["ok", "r/../s"], "d": "fine/path"}
    alt, note = normalized_paths(args) or ({}, "")
    assert alt == {"a": "x/y", "n": 1, "b": "p/q", "c": ["ok", "s"], "d": "fine/path"}
    assert (
        note == "path a='x/y' (normalized from 'x/./y'); "
        "path b='p/q' (normalized from 'p//q'); path c (normalized)"
    )
    assert normalized_paths({"a": ["ok", 3], "b": "x/./y"}, skip={"b"}) is None
    assert normalized_paths({"c": ["ok"], "a": "x/./y"}) == (
        {"c": ["ok"], "a": "x/y"},
        "path a='x/y' (normalized from 'x/./y')",
    )


def test_a_deny_sees_a_later_unnormal_argument_after_a_normal_list() -> None:
    config = {"deny": ['t(p ~ "src/secrets/*")'], "default": "allow"}
    assert explain(config, "t", {"l": ["a"], "p": "src/./secrets/k"}).behavior.value == "deny"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://h/a?next=/x/../y", True),  # the query is not the path
        ("https://h/a#/x/../y", True),
        ("https://h/a?q=1#/../y", True),
        ("https://h/a/../b?q=1", False),
        ("/a", True),
        ("//a", False),
        ("a//", False),
        ("a/b/", True),
        ("a/b/.", False),
        ("a/./", False),
        ("/a/b", True),
    ],
)
def test_plain_paths_and_urls(value: str, expected: bool) -> None:
    assert plain(value) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, [2, True]], [1, [2, True]], True),
        ([1, [2, True]], [1, [2, 1]], False),
        ([1], [1, 2], False),
        ([1, 2], [1, 3], False),
        ([1], (1,), False),
        ({"a": [1]}, {"a": [1]}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, {"b": 1}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, [("a", 1)], False),
        ("ab", ["a", "b"], False),
    ],
)
def test_strict_equal_on_nested_values(a: Any, b: Any, expected: bool) -> None:
    assert strict_equal(a, b) is expected
    assert strict_equal(b, a) is expected


def test_a_rule_with_three_or_more_conditions_needs_all_of_them() -> None:
    config = {"allow": ['t(a = 1, b = 2, c ~ "x*")', 't(a = 1, b = 2, c ~ "y*", d = 4)']}
    assert explain(config, "t", {"a": 1, "b": 2, "c": "xz"}).behavior.value == "allow"
    assert explain(config, "t", {"a": 1, "b": 2, "c": "zz"}).behavior.value == "ask"
    assert explain(config, "t", {"a": 1, "b": 3, "c": "xz"}).behavior.value == "ask"
    assert explain(config, "t", {"a": 1, "b": 2, "c": "yz", "d": 4}).behavior.value == "allow"
    assert explain(config, "t", {"a": 1, "b": 2, "c": "yz", "d": 5}).behavior.value == "ask"


def test_a_url_without_a_path_is_plain() -> None:
    assert plain("https://example.com") and plain("https://example.com/")


def test_a_declared_argument_first_does_not_stop_the_others() -> None:
    assert normalized_paths({"b": "x/./y", "a": "p//q"}, skip={"b"}) == (
        {"b": "x/./y", "a": "p/q"},
        "path a='p/q' (normalized from 'p//q')",
    )


def test_a_leading_double_slash_keeps_the_name_after_it() -> None:
    from awaken_ext_permissions._vouch import unnormal_path

    assert unnormal_path("//XX/./y") == "/XX/y"


def test_a_missing_last_key_is_missing_not_null() -> None:
    from awaken_ext_permissions._matchers import MISSING, single_getter

    assert single_getter(("a", "b"))({"a": {}}) is MISSING
    config = {"deny": ["t(a.b = null)"], "default": "allow"}
    assert explain(config, "t", {"a": {}}).behavior.value == "allow"
    assert explain(config, "t", {"a": {"b": None}}).behavior.value == "deny"
