"""Rule syntax errors and the checks shared by both rule forms (string and object).

Positions are 0-based offsets inside this module and 1-based in messages.
"""

from __future__ import annotations

import re
from typing import Any

from ._model import Operator

__all__ = ["RuleSyntaxError", "check_regex", "check_value"]


class RuleSyntaxError(ValueError):
    """A rule that does not parse or validate; names the text and the 1-based position."""

    def __init__(self, text: str, position: int, message: str) -> None:
        self.text = text
        self.position = position
        self.message = message
        super().__init__(f"invalid rule {text!r} at position {position}: {message}")


def _error(text: str, message: str, at: int) -> RuleSyntaxError:
    return RuleSyntaxError(text, at + 1, message)


def check_regex(text: str, source: str, at: int) -> None:
    """Raise a positioned error if ``source`` is not a valid Python regex."""
    try:
        re.compile(source)
    except re.error as exc:
        raise _error(text, f"bad regex: {exc.msg}", at + (exc.pos or 0)) from None


def check_value(text: str, op: Operator, value: Any, at: int) -> None:
    """Raise a positioned error if ``value`` does not suit ``op``."""
    if op in (Operator.GLOB, Operator.NOT_GLOB, Operator.REGEX, Operator.NOT_REGEX):
        if not isinstance(value, str):
            raise _error(text, f"operator {op.value!r} needs a string pattern", at)
        if op in (Operator.REGEX, Operator.NOT_REGEX):
            quoted = text[at : at + 1] in ("'", '"')
            check_regex(text, value, at + 1 if quoted else at)
    elif op is Operator.IN:
        if not isinstance(value, list):
            raise _error(text, "operator 'in' needs a [list] of values", at)
    elif op in (Operator.LT, Operator.GT) and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        raise _error(text, f"operator {op.value!r} needs a number", at)
