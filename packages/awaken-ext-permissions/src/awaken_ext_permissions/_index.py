"""An ordered rule list with hash indexes: "the first rule that matches", fast.

:class:`OrderedRules` answers the same question as scanning its rules in
order and returning the first whose conditions hold, but most rules are filed
in hash tables by one of their conditions on a plain path (no ``[*]``):

* an ``=`` condition with a scalar value, under ``(path, value)``;
* else a ``~`` glob whose literal prefix (the text before its first ``*``,
  ``?`` or ``[``) is not empty, under ``(path, len(prefix), prefix)``: a glob
  matches the whole string, so only values starting with the prefix can match.

A lookup costs one dict probe per indexed path (and prefix length) plus a scan
of the unindexed rules, stopping as soon as no earlier rule can win; each hit
is confirmed by testing all of its conditions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._matchers import MISSING, ArgsMatcher, single_getter
from ._model import Operator, Rule

__all__ = ["OrderedRules", "value_key"]

_Entry = tuple[int, Rule, ArgsMatcher]
_GLOB_META = re.compile(r"[*?\[]")


def value_key(value: Any) -> tuple[str, Any] | None:
    """A hashable key equal for strictly equal scalars (``true`` never meets ``1``)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z", None)
    return None


_Path = tuple[str | int, ...]


def _path(rule_path: Any) -> _Path:
    return tuple(s.key for s in rule_path if s.key is not None)


def _anchor(rule: Rule) -> tuple[str, _Path, Any] | None:
    """How to file ``rule``: ``("eq", path, value key)``, ``("prefix", path, prefix)``."""
    for condition in rule.when:
        if condition.op is Operator.EQ and not condition.has_wildcard:
            key = value_key(condition.value)
            if key is not None:
                return "eq", _path(condition.path), key
    for condition in rule.when:
        if condition.op is Operator.GLOB and not condition.has_wildcard:
            prefix = _GLOB_META.split(condition.value, maxsplit=1)[0]
            if prefix:
                return "prefix", _path(condition.path), prefix
    return None


class OrderedRules:
    """Rules in decision order; :meth:`first` returns the earliest one that matches."""

    __slots__ = ("_groups", "_prefixes", "_scan", "rules")

    def __init__(self, ordered: Sequence[tuple[Rule, ArgsMatcher]]) -> None:
        self.rules = tuple(ordered)
        groups: dict[_Path, dict[tuple[str, Any], list[_Entry]]] = {}
        prefixes: dict[_Path, dict[int, dict[str, list[_Entry]]]] = {}
        scan: list[_Entry] = []
        for position, (rule, body) in enumerate(self.rules):
            entry = (position, rule, body)
            anchor = _anchor(rule)
            if anchor is None:
                scan.append(entry)
            elif anchor[0] == "eq":
                groups.setdefault(anchor[1], {}).setdefault(anchor[2], []).append(entry)
            else:
                prefix: str = anchor[2]
                by_len = prefixes.setdefault(anchor[1], {}).setdefault(len(prefix), {})
                by_len.setdefault(prefix, []).append(entry)
        self._scan = tuple(scan)
        self._groups = tuple(
            (single_getter(path), {k: tuple(v) for k, v in table.items()})
            for path, table in groups.items()
        )
        self._prefixes = tuple(
            (
                single_getter(path),
                tuple(
                    (length, {p: tuple(v) for p, v in table.items()})
                    for length, table in sorted(lengths.items())
                ),
            )
            for path, lengths in prefixes.items()
        )

    def __bool__(self) -> bool:
        return bool(self.rules)

    def first(self, args: Mapping[str, Any]) -> Rule | None:
        """The earliest rule (in decision order) whose conditions ``args`` satisfy."""
        best: _Entry | None = None
        for get, table in self._groups:
            value = get(args)
            if value is MISSING:
                continue
            key = value_key(value)
            entries = table.get(key) if key is not None else None
            if not entries:
                continue
            best = _earliest(entries, args, best)
        for get, lengths in self._prefixes:
            value = get(args)
            if not isinstance(value, str):
                continue
            for length, by_prefix in lengths:
                if length > len(value):
                    break
                hits = by_prefix.get(value[:length])
                if hits:
                    best = _earliest(hits, args, best)
        for entry in self._scan:
            if best is not None and entry[0] >= best[0]:
                break
            if entry[2](args):
                best = entry
                break
        return best[1] if best is not None else None

    def unconditional(self) -> bool:
        """Whether any rule has no conditions."""
        return any(rule.unconditional for rule, _ in self.rules)


def _earliest(
    entries: Sequence[_Entry], args: Mapping[str, Any], best: _Entry | None
) -> _Entry | None:
    """The first of ``entries`` (in order) that matches, if earlier than ``best``."""
    for entry in entries:
        if best is not None and entry[0] >= best[0]:
            break
        if entry[2](args):
            return entry
    return best
