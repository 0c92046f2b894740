"""Matcher compilation: rules become closures over precompiled regexes.

Globs use :func:`fnmatch.translate` (stdlib), matched case-sensitively against
the whole string: ``*`` matches any run of characters *including* ``/`` (so
``src/*`` and ``src/**`` both match ``src/a/b.py``), ``?`` one character,
``[abc]`` / ``[!abc]`` a set. Regexes (``=~``, ``/tool regex/``) use
:func:`re.search`, so anchor them with ``^...$`` for a whole-string match.

Values compare strictly: ``true`` never equals ``1``, numbers compare by value
(``1 = 1.0``), and glob/regex operators only match strings. With a ``[*]``
path, a condition holds for a ``deny`` or ``ask`` rule when *any* element
satisfies it and for an ``allow`` rule only when *every* element does (and
there is at least one): restrictive rules match easily, permissive ones
strictly. In the same spirit an allow rule's string conditions (``~``, ``=~``,
their negations, ``!=``) hold only for a string :mod:`._vouch` calls plain (no
shell operators, a normal path), and ``<``/``>`` fail closed on what no cap can
order (:mod:`._numbers`).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from ._model import Behavior, Condition, Operator, Rule, Segment, ToolKind
from ._numbers import numeric_test
from ._vouch import plain

__all__ = [
    "MISSING",
    "ArgsMatcher",
    "compile_conditions",
    "compile_tool",
    "glob_regex",
    "resolve_path",
    "single_getter",
    "strict_equal",
    "string_finder",
]

ArgsMatcher = Callable[[Mapping[str, Any]], bool]
"""A compiled rule body: does a call's arguments satisfy every condition?"""

MISSING: Any = object()
"""What :func:`single_getter` returns for a path the arguments do not have."""


@functools.lru_cache(maxsize=8192)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The compiled whole-string regex of a glob (see the module docs)."""
    return re.compile(fnmatch.translate(pattern))


@functools.lru_cache(maxsize=8192)
def _regex(source: str) -> re.Pattern[str]:
    return re.compile(source)


def string_finder(condition: Condition) -> tuple[str, Callable[[str], Any]] | None:
    """``(required text, match)`` of a ``~`` or ``=~`` condition on a plain path.

    The condition holds exactly when the argument is a string that contains
    the required text ("" if none) and ``match(value)`` is not ``None``. Other
    conditions (negations, ``[*]`` paths, other operators) return ``None``.
    """
    if condition.has_wildcard:
        return None
    if condition.op is Operator.GLOB:
        return _literal(condition.value), glob_regex(condition.value).match
    if condition.op is Operator.REGEX:
        return "", _regex(condition.value).search
    return None


def compile_tool(rule: Rule) -> Callable[[str], bool]:
    """A predicate telling whether ``rule`` names a tool id."""
    if rule.kind is ToolKind.EXACT:
        name = rule.tool
        return lambda tool: tool == name
    if rule.kind is ToolKind.GLOB:
        return glob_regex(rule.tool).match  # type: ignore[return-value]
    return re.compile(rule.tool).search  # type: ignore[return-value]


def resolve_path(args: Any, path: tuple[Segment, ...]) -> list[Any]:
    """Every value ``path`` reaches in ``args``; empty when the path is missing."""
    values = [args]
    for seg in path:
        key = seg.key
        nxt: list[Any] = []
        for value in values:
            if key is None:
                if isinstance(value, list):
                    nxt.extend(value)
                elif isinstance(value, dict):
                    nxt.extend(value.values())
            elif isinstance(key, int):
                if isinstance(value, list) and key < len(value):
                    nxt.append(value[key])
            elif isinstance(value, dict) and key in value:
                nxt.append(value[key])
        if not nxt:
            return nxt
        values = nxt
    return values


def single_getter(path: tuple[Segment, ...] | tuple[str | int, ...]) -> Callable[[Any], Any]:
    """A fast getter for a path without ``[*]``; returns :data:`MISSING` when absent."""
    keys = tuple(seg.key if isinstance(seg, Segment) else seg for seg in path)
    if len(keys) == 1 and isinstance(keys[0], str):  # the common case: one argument name
        name = keys[0]

        def get_one(args: Any) -> Any:
            return args.get(name, MISSING) if isinstance(args, dict) else MISSING

        return get_one

    def get(args: Any) -> Any:
        value = args
        for key in keys:
            if isinstance(key, int):
                if not isinstance(value, list) or key >= len(value):
                    return MISSING
                value = value[key]
            else:
                if not isinstance(value, dict):
                    return MISSING
                value = value.get(key, MISSING)
                if value is MISSING:
                    return MISSING
        return value

    return get


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality where booleans only equal booleans (``true != 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _prefiltered(find: Callable[[str], Any], needed: str) -> Callable[[str], Any]:
    return lambda v: find(v) if needed in v else None


def _literal(pattern: str) -> str:
    """The longest text every match of a glob contains ("" if unknown).

    Without ``[`` sets every character but ``*`` and ``?`` is literal in a
    ``fnmatch`` glob (it has no escapes), so each such run must occur.
    """
    if "[" in pattern:
        return ""
    return max(re.split(r"[*?]", pattern), key=len)


_VOUCHED_OPS = frozenset(
    {Operator.NE, Operator.GLOB, Operator.NOT_GLOB, Operator.REGEX, Operator.NOT_REGEX}
)
"""Operators whose match an allow rule cannot vouch for on an unplain string (``_vouch``)."""


def _test(op: Operator, expected: Any, behavior: Behavior = Behavior.DENY) -> Callable[[Any], bool]:
    """A predicate over one argument value (the value is known to exist)."""
    if op in (Operator.LT, Operator.GT):
        return numeric_test(op, expected, restrictive=behavior is not Behavior.ALLOW)
    test = _plain_test(op, expected)
    if behavior is Behavior.ALLOW and op in _VOUCHED_OPS:
        return lambda v: test(v) and plain(v)
    return test


def _plain_test(op: Operator, expected: Any) -> Callable[[Any], bool]:
    if op is Operator.EQ:
        return lambda v: strict_equal(v, expected)
    if op is Operator.NE:
        return lambda v: not strict_equal(v, expected)
    if op in (Operator.GLOB, Operator.NOT_GLOB, Operator.REGEX, Operator.NOT_REGEX):
        glob = op in (Operator.GLOB, Operator.NOT_GLOB)
        find: Callable[[str], Any] = glob_regex(expected).match if glob else _regex(expected).search
        needed = _literal(expected) if glob else ""
        if needed:  # a substring test (C speed) spares most regex runs of `*x*` globs
            find = _prefiltered(find, needed)
        if op in (Operator.GLOB, Operator.REGEX):
            return lambda v: isinstance(v, str) and find(v) is not None
        return lambda v: not (isinstance(v, str) and find(v) is not None)
    options = list(expected)  # Operator.IN
    hashable = {o for o in options if isinstance(o, str)}
    if len(hashable) == len(options):
        return lambda v: isinstance(v, str) and v in hashable
    return lambda v: any(strict_equal(v, o) for o in options)


def _compile_condition(condition: Condition, behavior: Behavior) -> ArgsMatcher:
    test = _test(condition.op, condition.value, behavior)
    every = behavior is Behavior.ALLOW
    if not condition.has_wildcard:
        get = single_getter(condition.path)

        def one(args: Mapping[str, Any]) -> bool:
            value = get(args)
            return value is not MISSING and test(value)

        return one
    path = condition.path
    if every:
        return lambda args: bool(values := resolve_path(args, path)) and all(map(test, values))
    return lambda args: any(map(test, resolve_path(args, path)))


def compile_conditions(rule: Rule) -> ArgsMatcher:
    """One closure testing every condition of ``rule`` (ANDed)."""
    tests = [_compile_condition(c, rule.behavior) for c in rule.when]
    if not tests:
        return lambda args: True
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda args: first(args) and second(args)
    return lambda args: all(t(args) for t in tests)
