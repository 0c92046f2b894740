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
``/bin/r? x``) cannot be checked and makes the line unparsable. So do two
gaps of bashlex 0.18 that would hide a command: a newline inside ``$(...)``,
backticks or ``<(...)`` (it drops what follows), and a ``$(...)`` or backtick
it returns no node for (inside ``${...}`` or a here-doc body, where bash still
runs it): every substitution in the text must be one the parser saw.

bashlex is pure Python (~0.2 ms per simple command), so two things keep it off
the hot path without ever guessing:

* **The fast path.** A line made only of letters, digits, blanks, ``_./=:,@%+~*?-``
  and the list operators has no quote, expansion, redirection, group or
  comment: bash splits it exactly at ``&&``, ``||``, ``;``, ``|``, ``&`` and
  newlines and reads each part as blank-separated words. The same holds for
  such a line with ``$(...)`` or backtick substitutions whose bodies are such
  lines themselves (not nested, no arithmetic ``$((``): each body's commands
  follow the command that holds it. These lines are split with regexes unless
  a part is empty, a word is a reserved word (``if``, ``time``, ``{``...) or the
  command name is computed; everything else goes to bashlex. A property test
  checks that the fast path and bashlex agree on every line it accepts.
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
_FAST_OUTER = re.compile(r"[A-Za-z0-9_ \t\n./=:,@%+~*?;&|$()`-]*")
"""The same plus what plain ``$(...)`` and backtick substitutions need."""
_SUBSTITUTING = re.compile(r"[$`]")
_WORD_CHARS = r"A-Za-z0-9_./=:,@%+~*?\x00\-"
_TOKEN = re.compile(
    r"[ \t]*(?:(?P<op>&&|\|\||[;&|\n])|(?P<word>(?:["
    + _WORD_CHARS
    + r"]|'[^'\n]*'|\"[^\"$`\\!\n]*\")+))"
)
"""One list operator or one word: plain characters and ``'...'``/``"..."`` without
newlines (and, in double quotes, without ``$``, backticks, ``\\`` or ``!``)."""
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_UNQUOTED = re.compile("[" + _WORD_CHARS + r" \t\n;&|]*")
_SUBSTITUTION = re.compile(r"\$\(([^()$`]*)\)|`([^()$`]*)`")
_LEFT_OVER = re.compile(r"[$()`]")
_COMMAND_OPEN = re.compile(r"\$\((?!\()")
_PROCESS_OPEN = re.compile(r"[<>]\(")
_NOT_IN_BODY = re.compile(r"[&\n]|\|\|")
_HELD = re.compile("\x00([0-9]+)\x00")
_SEPARATOR = re.compile(r"&&|\|\||[;&|\n]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_RESERVED = frozenset(
    [
        "!",
        "[[",
        "]]",
        "{",
        "}",
        "case",
        "coproc",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "fi",
        "for",
        "function",
        "if",
        "in",
        "select",
        "then",
        "time",
        "until",
        "while",
    ]
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
    fast = _fast_split(command)
    if fast is not None:
        return fast
    if len(command) > MAX_PARSED:
        return f"the shell command is longer than {MAX_PARSED} characters"
    return _parse(command)


def _fast_split(command: str) -> tuple[str, ...] | None:
    """The parts of a line of plain words, list operators and plain ``$(...)`` or
    backtick substitutions, or ``None`` (use bashlex)."""
    if "\x00" in command:
        return None  # NUL marks held substitutions below (and bash cannot pass one)
    if not _SUBSTITUTING.search(command):
        return _plain_split(command, [], [])
    if not _FAST_OUTER.fullmatch(command):
        return None  # substitutions in a line with quotes, redirections...: bashlex
    sources: list[str] = []
    inner: list[tuple[str, ...] | None] = []

    def hold(match: re.Match[str]) -> str:
        body = match.group(1) if match.group(1) is not None else match.group(2)
        # bashlex refuses && and || inside a substitution and cannot split at its
        # newlines (see _parse); bash can, but the fast path stays on bashlex's side.
        plain = _FAST.fullmatch(body) and not _NOT_IN_BODY.search(body)
        inner.append(_plain_split(body, [], []) if plain else None)
        sources.append(match.group())
        return f"\x00{len(sources) - 1}\x00"

    text = _SUBSTITUTION.sub(hold, command)
    if None in inner or _LEFT_OVER.search(text):
        return None  # an empty or non-plain substitution, or a stray $ ( ) `
    return _plain_split(text, sources, [found for found in inner if found is not None])


def _plain_split(
    command: str, sources: list[str], inner: list[tuple[str, ...]]
) -> tuple[str, ...] | None:
    """Split at list operators; ``sources``/``inner``: the held substitutions' text and parts."""
    text = command.rstrip(" \t\n")
    quoted = "'" in text or '"' in text
    pieces = _quoted_pieces(text) if quoted else _pieces(text)
    if pieces is None:
        return None
    parts: list[str] = []
    for span, raw in pieces:
        if not raw:
            return None
        words = [_unquote(w) for w in raw] if quoted else raw
        if not _RESERVED.isdisjoint(words):
            return None
        start = 0
        while start < len(words) and _ASSIGNMENT.match(raw[start]):
            start += 1
        if start < len(words) and _UNKNOWN_NAME.search(words[start].replace("\x00", "$")):
            return None
        read = " ".join(words[start:])
        if not sources:
            _add(parts, span, read)
            continue
        _add(parts, _restore(span, sources), _restore(read, sources))
        for held in _HELD.findall(span):  # a substitution's commands follow their command
            parts.extend(inner[int(held)])
    return tuple(parts)


_Pieces = list[tuple[str, list[str]]]
"""Each simple command as ``(its text, its words as written)``."""


def _pieces(text: str) -> _Pieces | None:
    """Without quotes: split at the operators, then at blanks (C speed)."""
    if not _UNQUOTED.fullmatch(text):
        return None
    return [(piece.strip(" \t"), piece.split()) for piece in _SEPARATOR.split(text)]


def _quoted_pieces(text: str) -> _Pieces | None:
    """With quotes: token by token, so an operator inside quotes stays in its word."""
    pieces: _Pieces = []
    words: list[str] = []
    first = last = pos = 0
    while pos < len(text):
        token = _TOKEN.match(text, pos)
        if token is None:
            return None  # a character or quote the fast path does not read
        pos = token.end()
        if token.group("op"):
            pieces.append((text[first:last], words))
            words = []
            continue
        if not words:
            first = token.start("word")
        words.append(token.group("word"))
        last = pos
    pieces.append((text[first:last], words))
    return pieces


def _unquote(word: str) -> str:
    return _QUOTED.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), word)


def _restore(text: str, sources: list[str]) -> str:
    if "\x00" not in text:
        return text
    return _HELD.sub(lambda m: sources[int(m.group(1))], text)


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
    found = [0, 0]  # command substitutions, process substitutions

    class _Collect(bashlex.ast.nodevisitor):  # type: ignore[misc]
        def visitcommandsubstitution(self, node: Any, _command: Any) -> None:
            found[0] += 1
            self._substitution(node)

        def visitprocesssubstitution(self, node: Any, _command: Any) -> None:
            found[1] += 1
            self._substitution(node)

        def _substitution(self, node: Any) -> None:
            # bashlex 0.18 drops what follows a newline inside $(...), `...` and <(...)
            # (`echo $(true<newline>rm -rf ~)` yields only `true`): refuse, never guess.
            start, end = node.pos
            if "\n" in command[start:end]:
                problems.append("a newline inside a command or process substitution")

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
    # bashlex does not look inside ${...} or an unquoted here-doc's body, where bash
    # still runs $(...) and backticks: every one in the text must be a parsed node.
    written = len(_COMMAND_OPEN.findall(command)) + (command.count("`") + 1) // 2
    if written > found[0] or len(_PROCESS_OPEN.findall(command)) > found[1]:
        problems.append("a substitution the parser does not see (in ${...}, a here-doc, quotes)")
    if problems:
        return f"cannot check the shell command: {problems[0]}"
    if not parts:
        return "the shell command has no simple command to check"
    return tuple(parts)
