"""The compact string form: ``write_file(path ~ "src/**")`` parsed into a :class:`Rule`.

Grammar (whitespace is free between tokens)::

    rule      := tool [ "(" [ cond { sep cond } ] ")" ]
    tool      := "/" regex "/" | name            name: letters, digits and _ - . : * ? [ ] !
    sep       := "," | "and" | "&&"
    cond      := path op value
    path      := ( ident | index ) { "." ident | index }
    index     := "[" ( integer | "*" | string ) "]"
    op        := "=" | "!=" | "~" | "!~" | "=~" | "!=~" | "in" | "<" | ">"
    value     := string | number | true | false | null | "[" [ value { "," value } ] "]"
               | "/" regex "/"                           (a regex literal, for =~ and !=~)
    string    := JSON "double-quoted" string | 'single-quoted' (\\' and \\\\ escapes)

A hand-written recursive-descent parser; every error is a
:class:`RuleSyntaxError` carrying the text and the 1-based character position.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from typing import Any

from ._model import Behavior, Condition, Operator, Rule, Segment, ToolKind
from ._syntax import RuleSyntaxError, check_regex, check_value

__all__ = [
    "RuleSyntaxError",
    "make_condition",
    "parse_condition",
    "parse_path",
    "parse_rule",
    "parse_rule_line",
]

_NAME_CHARS = re.compile(r"[A-Za-z0-9_\-.:*?\[\]!]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INT = re.compile(r"[0-9]+")
_OP_CHARS = re.compile(r"[=!~<>]+|in\b")
_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}
_OPERATORS = ", ".join(op.value for op in Operator)


class _Parser:
    """Cursor over one rule text; ``pos`` is a 0-based offset."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str, at: int | None = None) -> RuleSyntaxError:
        return RuleSyntaxError(self.text, (self.pos if at is None else at) + 1, message)

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at_end(self) -> bool:
        self.ws()
        return self.pos >= len(self.text)

    def expect(self, char: str, what: str) -> None:
        self.ws()
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "the end"
            raise self.error(f"expected {what}, found {found}")
        self.pos += 1

    # -- tool -----------------------------------------------------------------

    def tool(self) -> tuple[str, ToolKind]:
        self.ws()
        if self.peek() == "/":
            return self.regex(), ToolKind.REGEX
        match = _NAME_CHARS.match(self.text, self.pos)
        if match is None:
            found = repr(self.peek()) if self.peek() else "the end"
            raise self.error(f"expected a tool id, glob or /regex/, found {found}")
        self.pos = match.end()
        name = match.group()
        kind = ToolKind.GLOB if any(c in name for c in "*?[") else ToolKind.EXACT
        return name, kind

    def regex(self) -> str:
        """A ``/.../`` literal (``\\/`` escapes a slash); compiled to check it."""
        start = self.pos
        self.pos += 1
        body: list[str] = []
        while True:
            char = self.peek()
            if not char:
                raise self.error("unterminated /regex/: add the closing '/'", start)
            if char == "\\" and self.text[self.pos + 1 : self.pos + 2] == "/":
                body.append("/")
                self.pos += 2
                continue
            if char == "\\" and self.pos + 1 < len(self.text):
                body.append(self.text[self.pos : self.pos + 2])
                self.pos += 2
                continue
            self.pos += 1
            if char == "/":
                break
            body.append(char)
        source = "".join(body)
        check_regex(self.text, source, start + 1)
        return source

    # -- conditions -------------------------------------------------------------

    def conditions(self) -> tuple[Condition, ...]:
        self.expect("(", "'('")
        found: list[Condition] = []
        self.ws()
        if self.peek() == ")":
            self.pos += 1
            return ()
        while True:
            found.append(self.condition())
            self.ws()
            if self.peek() == ")":
                self.pos += 1
                return tuple(found)
            if self.peek() == ",":
                self.pos += 1
            elif self.text.startswith("&&", self.pos):
                self.pos += 2
            elif re.match(r"and\b", self.text[self.pos :]):
                self.pos += 3
            else:
                found_text = repr(self.peek()) if self.peek() else "the end"
                raise self.error(
                    f"expected ',', 'and' or ')' after a condition, found {found_text}"
                )

    def condition(self) -> Condition:
        self.ws()
        path = self.path()
        self.ws()
        op_at = self.pos
        match = _OP_CHARS.match(self.text, self.pos)
        if match is None:
            found = repr(self.peek()) if self.peek() else "the end"
            raise self.error(f"expected an operator ({_OPERATORS}), found {found}")
        try:
            op = Operator(match.group())
        except ValueError:
            raise self.error(
                f"unknown operator {match.group()!r} (use one of {_OPERATORS})", op_at
            ) from None
        self.pos = match.end()
        self.ws()
        value_at = self.pos
        value = self.value()
        check_value(self.text, op, value, value_at)
        return Condition(path, op, value)

    def path(self) -> tuple[Segment, ...]:
        segments: list[Segment] = []
        while True:
            char = self.peek()
            if char == "[":
                segments.append(self.index())
            elif char == "." and segments:
                self.pos += 1
                segments.append(self.ident())
            elif not segments:
                segments.append(self.ident())
            else:
                return tuple(segments)

    def ident(self) -> Segment:
        match = _IDENT.match(self.text, self.pos)
        if match is None:
            found = repr(self.peek()) if self.peek() else "the end"
            raise self.error(f"expected an argument name (letters, digits, _ or -), found {found}")
        self.pos = match.end()
        return Segment(match.group())

    def index(self) -> Segment:
        start = self.pos
        self.pos += 1
        self.ws()
        char = self.peek()
        key: str | int | None
        if char == "*":
            self.pos += 1
            key = None
        elif char in "\"'":
            key = self.string()
        else:
            match = _INT.match(self.text, self.pos)
            if match is None:
                raise self.error('expected an index: [0], [*] or ["key"]', start)
            self.pos = match.end()
            key = int(match.group())
        self.expect("]", "']'")
        return Segment(key)

    # -- values -----------------------------------------------------------------

    def value(self) -> Any:
        self.ws()
        char = self.peek()
        if char in "\"'" and char:
            return self.string()
        if char == "/":
            return self.regex()
        if char == "[":
            return self.list_value()
        number = _NUMBER.match(self.text, self.pos)
        if number is not None:
            self.pos = number.end()
            return json.loads(number.group())
        word = _IDENT.match(self.text, self.pos)
        if word is not None and word.group() in _WORDS:
            self.pos = word.end()
            return _WORDS[word.group()]
        raise self.error(
            'expected a value: a "string", a number, true, false, null, a [list] or a /regex/'
        )

    def list_value(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        self.ws()
        if self.peek() == "]":
            self.pos += 1
            return items
        while True:
            items.append(self.value())
            self.ws()
            if self.peek() == "]":
                self.pos += 1
                return items
            self.expect(",", "',' or ']' in a list")

    def string(self) -> str:
        start, quote = self.pos, self.peek()
        i = start + 1
        while i < len(self.text):
            char = self.text[i]
            if char == "\\":
                i += 2
                continue
            if char == quote:
                break
            i += 1
        else:
            raise self.error(f"unterminated string: add the closing {quote}", start)
        body = self.text[start + 1 : i]
        self.pos = i + 1
        if quote == "'":
            return re.sub(r"\\([\\'])", r"\1", body)
        try:
            value: str = json.loads(self.text[start : i + 1])
        except json.JSONDecodeError as exc:
            raise self.error(f"bad string escape: {exc.msg}", start + exc.pos) from None
        return value


def parse_rule(text: str, behavior: Behavior | str, index: int = 0) -> Rule:
    """Parse ``tool`` or ``tool(cond, ...)`` into a :class:`Rule` with ``behavior``."""
    return _at(_parse_rule(text, Behavior(behavior)), index)


def parse_rule_line(text: str, index: int = 0) -> Rule:
    """Parse ``allow|deny|ask tool(cond, ...)``: a rule with its behavior first."""
    return _at(_parse_rule_line(text), index)


def _at(rule: Rule, index: int) -> Rule:
    return rule if rule.index == index else dataclasses.replace(rule, index=index)


# Config validation parses each rule and compiling parses it again: parse once.
@functools.lru_cache(maxsize=4096)
def _parse_rule(text: str, behavior: Behavior) -> Rule:
    return _rule(_Parser(text), behavior, 0)


@functools.lru_cache(maxsize=4096)
def _parse_rule_line(text: str) -> Rule:
    parser = _Parser(text)
    parser.ws()
    word = _IDENT.match(text, parser.pos)
    if word is None or word.group() not in {b.value for b in Behavior}:
        raise parser.error("a rule line starts with its behavior: allow, deny or ask")
    parser.pos = word.end()
    if not parser.peek().isspace():
        raise parser.error("expected a space after the behavior")
    return _rule(parser, Behavior(word.group()), 0)


def _rule(parser: _Parser, behavior: Behavior, index: int) -> Rule:
    tool, kind = parser.tool()
    when: tuple[Condition, ...] = ()
    if not parser.at_end():
        when = parser.conditions()
        if not parser.at_end():
            raise parser.error(f"unexpected {parser.peek()!r} after the rule's ')'")
    return Rule(tool=tool, kind=kind, behavior=behavior, when=when, index=index)


def parse_condition(text: str) -> Condition:
    """Parse one ``path op value`` condition."""
    parser = _Parser(text)
    condition = parser.condition()
    if not parser.at_end():
        raise parser.error(f"unexpected {parser.peek()!r} after the condition")
    return condition


def parse_path(text: str) -> tuple[Segment, ...]:
    """Parse an argument path such as ``a.b``, ``items[0]`` or ``items[*].name``."""
    parser = _Parser(text)
    parser.ws()
    path = parser.path()
    if not parser.at_end():
        raise parser.error(f"unexpected {parser.peek()!r} in the path")
    return path


def make_condition(path: str, op: str, value: Any) -> Condition:
    """A condition from the object form ``{path, op, value}``, validated like parsed ones."""
    segments = parse_path(path)
    text = f"{path} {op} {json.dumps(value)}"
    parser = _Parser(text)
    try:
        operator = Operator(op)
    except ValueError:
        raise parser.error(
            f"unknown operator {op!r} (use one of {_OPERATORS})", len(path) + 1
        ) from None
    check_value(text, operator, value, len(path) + len(op) + 2)
    return Condition(segments, operator, value)
