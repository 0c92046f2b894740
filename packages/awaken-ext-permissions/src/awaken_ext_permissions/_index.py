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
is confirmed by testing all of its conditions. In the scan, consecutive rules
guarded by a ``~`` or ``=~`` condition on the same plain path form one batch:
the argument is read once, then each rule costs one substring test (a glob's
longest literal run) and, only if that passes, one C regex call, instead of a
chain of Python closures. That is the linear worst case (1,000 regexes or
leading-``*`` globs on one tool) at about 0.1-0.2 µs per rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from ._matchers import MISSING, ArgsMatcher, single_getter, string_finder
from ._model import Behavior, Operator, Rule

__all__ = ["OrderedRules", "value_key"]

_Entry = tuple[int, Rule, ArgsMatcher]
# (position, required text, match, entry, the whole body when the rule has more conditions)
_Guarded = tuple[int, str, Callable[[str], Any], _Entry, ArgsMatcher | None]
_Segment = tuple[int, Callable[[Any], Any] | None, tuple[Any, ...]]
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

    __slots__ = ("_groups", "_prefixes", "_scan", "_shown", "rules")
    _scan: tuple[_Segment, ...]

    def __init__(
        self, ordered: Sequence[tuple[Rule, ArgsMatcher]], shown: Sequence[Rule] = ()
    ) -> None:
        """``shown``: the rule to return for each position (default: the matched rule;
        case-folded path rules are matched in their folded form and shown as written)."""
        self.rules = tuple(ordered)
        self._shown = tuple(shown) if shown else tuple(rule for rule, _ in self.rules)
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
        self._scan = _segments(scan)
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
            size = len(value)
            for length, by_prefix in lengths:
                if length > size:
                    break
                hits = by_prefix.get(value[:length])
                if hits:
                    best = _earliest(hits, args, best)
        if not self._scan:
            return self._shown[best[0]] if best is not None else None
        best = _scan(self._scan, args, best)
        return self._shown[best[0]] if best is not None else None

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


def _guard(entry: _Entry) -> tuple[Any, _Guarded] | None:
    """``(path, guarded entry)`` when a ``~``/``=~`` condition on a plain path guards it."""
    rule = entry[1]
    for condition in rule.when:
        found = string_finder(condition)
        if found is not None:
            # An allow's body also checks that the value is plain (``_vouch``): keep it.
            whole = len(rule.when) > 1 or rule.behavior is Behavior.ALLOW
            rest = entry[2] if whole else None
            return _path(condition.path), (entry[0], found[0], found[1], entry, rest)
    return None


def _segments(scan: Sequence[_Entry]) -> tuple[_Segment, ...]:
    """The scan as runs: ``(first position, getter, guarded entries)`` batches of one
    path, and ``(first position, None, entries)`` runs of other rules."""
    out: list[_Segment] = []
    key: Any = None
    run: list[Any] = []
    for entry in scan:
        guarded = _guard(entry)
        this = ("batch", guarded[0]) if guarded is not None else ("plain",)
        if run and this != key:
            out.append(_segment(key, run))
            run = []
        key = this
        run.append(guarded[1] if guarded is not None else entry)
    if run:
        out.append(_segment(key, run))
    return tuple(out)


def _segment(key: Any, run: list[Any]) -> _Segment:
    getter = single_getter(key[1]) if key[0] == "batch" else None
    return (run[0][0], getter, tuple(run))


def _scan(
    segments: Sequence[_Segment], args: Mapping[str, Any], best: _Entry | None
) -> _Entry | None:
    """The first scanned rule that matches, if earlier than ``best``."""
    for first, get, items in segments:
        if best is not None and first >= best[0]:
            return best
        if get is None:
            for entry in cast("tuple[_Entry, ...]", items):
                if best is not None and entry[0] >= best[0]:
                    return best
                if entry[2](args):
                    return entry
            continue
        value = get(args)
        if not isinstance(value, str):
            continue  # a ~ or =~ condition only holds for a string
        for position, needed, match, guarded, rest in cast("tuple[_Guarded, ...]", items):
            if best is not None and position >= best[0]:
                return best
            if needed in value and match(value) is not None and (rest is None or rest(args)):
                return guarded
    return best
