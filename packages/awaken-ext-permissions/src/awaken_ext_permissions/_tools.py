"""Which glob and regex tool patterns can name a tool id, without testing them all.

A pattern is filed under the literal text every id it matches must start with:

* a glob (``mcp_github_*``) under the text before its first ``*``, ``?`` or ``[``
  (globs match the whole id);
* a regex under the literal run after a leading ``^`` (``^mcp_(get|put)$`` under
  ``mcp_``), but only when nothing can make that run optional or move it: no
  top-level ``|``, no inline flags, no quantifier on the run's last character.

Looking up an id costs one dict probe per distinct prefix length, plus a test
of each pattern that has no usable prefix. Every hit is still confirmed by the
pattern's own compiled test, so the index only ever skips patterns that cannot
match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ._model import Rule, ToolKind

__all__ = ["ToolPatterns", "literal_prefix"]

T = TypeVar("T")

_GLOB_META = re.compile(r"[*?\[]")
_REGEX_RUN = re.compile(r"[A-Za-z0-9_\-]*")
_FLAGS = re.compile(r"\(\?[aiLmsux-]")


def _top_level_alternation(pattern: str) -> bool:
    depth, i, in_class = 0, 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a leading ] is a member, not the end
                i += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        i += 1
    return False


def literal_prefix(rule: Rule) -> str:
    """The text every tool id ``rule`` names starts with ("" when unknown)."""
    if rule.kind is ToolKind.GLOB:
        return _GLOB_META.split(rule.tool, maxsplit=1)[0]
    if rule.kind is ToolKind.EXACT:
        return rule.tool
    pattern = rule.tool
    if not pattern.startswith("^") or _FLAGS.search(pattern) or _top_level_alternation(pattern):
        return ""
    run = _REGEX_RUN.match(pattern, 1)
    prefix = run.group() if run else ""
    after = pattern[1 + len(prefix) : 2 + len(prefix)]
    if after and after in "*+?{":
        prefix = prefix[:-1]
    return prefix


class ToolPatterns(Generic[T]):
    """Glob and regex tool patterns filed by literal prefix; :meth:`naming` finds matches."""

    __slots__ = ("_by_length", "_rest")

    def __init__(self, patterns: Sequence[tuple[Rule, Callable[[str], object], T]]) -> None:
        by_length: dict[int, dict[str, list[tuple[Callable[[str], object], T]]]] = {}
        rest: list[tuple[Callable[[str], object], T]] = []
        for rule, names, item in patterns:
            prefix = literal_prefix(rule)
            if prefix:
                table = by_length.setdefault(len(prefix), {})
                table.setdefault(prefix, []).append((names, item))
            else:
                rest.append((names, item))
        self._by_length = tuple(
            (length, {p: tuple(v) for p, v in table.items()})
            for length, table in sorted(by_length.items())
        )
        self._rest = tuple(rest)

    def naming(self, tool: str) -> list[T]:
        """The items of every pattern that matches ``tool``."""
        out = [item for names, item in self._rest if names(tool)]
        for length, table in self._by_length:
            if length > len(tool):
                break
            hits = table.get(tool[:length])
            if hits:
                out.extend(item for names, item in hits if names(tool))
        return out
