"""Shell command lines split into the simple commands bash would run.

``bashlex`` (a bash parser) is the authority: the parts of ``;``, ``&&``,
``||``, ``|``, ``&`` and newlines, and the commands inside ``$(...)``,
backticks, subshells, process substitutions and compound commands (``if``,
``for``, functions) each count as one. Each part is given twice when the two
differ: **as written** (``'rm'  -rf ~``) and **as bash reads it** (quotes and
escapes removed, words single-spaced, leading ``VAR=value`` assignments and
redirections dropped: ``rm -rf ~``), so quoting, tabs or a prefix never hide
a command from a deny, and an allow must hold for both spellings. A command
whose *name* is only known when it runs (``$X -rf ~``, ``$(echo rm) x``,
``/bin/r? x``) cannot be checked and makes the line unparsable.

bashlex is pure Python (~0.2 ms per simple command), so two things keep it off
the hot path without ever guessing:

* **The fast path.** A line made only of letters, digits, blanks, ``_./=:,@%+~*?-``
  and the list operators has no quote, expansion, substitution, redirection,
  group or comment: bash splits it exactly at ``&&``, ``||``, ``;``, ``|``,
  ``&`` and newlines and reads each part as blank-separated words. Such a line
  is split by a regex unless a part is empty or a word is a reserved word
  (``if``, ``time``, ``{``...), which go to bashlex. A property test checks that
  the fast path and bashlex agree on every line the fast path accepts.
* **A bounded cache.** Results (splits and refusals) are kept for the last
  4,096 distinct lines; the gate and the audit hook check each call twice.

Lines longer than 16,384 characters are not parsed: they are unparsable.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["MAX_PARSED", "split_shell"]

MAX_PARSED = 16_384
"""Longer lines are not given to the parser (its cost grows with the text): unparsable."""

_FAST = re.compile(r"[A-Za-z0-9_ \t\n./=:,@%+~*?;&|-]*")
"""Characters bash gives no meaning beyond words, globs, ``~`` and list operators."""
_SEPARATOR = re.compile(r"&&|\|\||[;&|\n]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_RESERVED = frozenset(
    "! [[ ]] { } case coproc do done elif else esac fi for function if in select then "
    "time until while".split()
)
_UNKNOWN_NAME = re.compile(r"[$`*?]|\[.*\]")
"""A command name with an expansion or a glob is only known when it runs."""


def split_shell(command: str) -> list[str]:
    """The simple commands of ``command``, in order; raises ``ValueError`` if unparsable.

    Each part appears as written and, when different, as bash reads it.
    """
    found = _split(command)
    if isinstance(found, str):
        raise ValueError(found)
    return list(found)


@functools.lru_cache(maxsize=4096)
def _split(command: str) -> tuple[str, ...] | str:
    """The parts of ``command``, or why it is unparsable (cached: refusals too)."""
    if _FAST.fullmatch(command):
        fast = _fast_split(command)
        if fast is not None:
            return fast
    if len(command) > MAX_PARSED:
        return f"the shell command is longer than {MAX_PARSED} characters"
    return _parse(command)


def _fast_split(command: str) -> tuple[str, ...] | None:
    """The parts of a line of plain words and list operators, or ``None`` (use bashlex)."""
    parts: list[str] = []
    for piece in _SEPARATOR.split(command.rstrip(" \t\n")):
        words = piece.split()
        if not words or not _RESERVED.isdisjoint(words):
            return None
        start = 0
        while start < len(words) and _ASSIGNMENT.match(words[start]):
            start += 1
        if start < len(words) and _UNKNOWN_NAME.search(words[start]):
            return None
        _add(parts, piece.strip(" \t"), " ".join(words[start:]))
    return tuple(parts)


def _add(parts: list[str], written: str, read: str) -> None:
    parts.append(written)
    if read and read != written:
        parts.append(read)


def _parse(command: str) -> tuple[str, ...] | str:
    import bashlex  # type: ignore[import-untyped]  # on first use, not at import

    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises several types (ParsingError, NotImplementedError)
        return f"cannot parse the shell command: {exc}"
    parts: list[str] = []
    problems: list[str] = []

    class _Collect(bashlex.ast.nodevisitor):  # type: ignore[misc]
        def visitcommand(self, node: Any, children: Any) -> None:
            start, end = node.pos
            written = command[start:end]
            words: list[str] = []
            for child in children:
                if child.kind == "assignment" and not words:
                    continue  # VAR=value before the name only sets the environment
                if child.kind in ("word", "assignment"):
                    words.append(child.word)
            if words and _UNKNOWN_NAME.search(words[0]):
                problems.append(f"the command name {words[0]!r} is only known when it runs")
            _add(parts, written, " ".join(words))

    for tree in trees:
        _Collect().visit(tree)
    if problems:
        return f"cannot check the shell command: {problems[0]}"
    if not parts:
        return "the shell command has no simple command to check"
    return tuple(parts)
