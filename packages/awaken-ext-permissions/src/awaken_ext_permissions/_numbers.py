"""Numeric conditions (``<``, ``>``) that fail closed on values no cap can order.

``nan > 100`` is false in every language, so a cap ``deny set_limit(value > 100)``
would let NaN through, and a tool that parses ``"nan"``, ``"inf"`` or ``"1e999"``
itself (no ``coerce_arguments``, or a ``str`` parameter) receives a value the rule
never compared. So:

* in a **deny or ask** rule a ``<``/``>`` condition also holds for NaN and both
  infinities, for a string that a tool could read as a number (``float()`` or
  ``int(x, 0)`` accepts it: ``" 5000 "``, ``"1_000"``, ``"0x1f"``, fullwidth
  digits) when that number is out of bounds or not finite, and for a boolean
  read as ``0``/``1``;
* in an **allow** rule it holds only for a finite int or float (never a bool,
  never a string), so nothing the cap cannot order is allowed by it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from ._model import Operator

__all__ = ["as_number", "numeric_test"]


def as_number(value: Any) -> int | float | None:
    """What a lenient reader could take ``value`` for as a number, or ``None``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if not isinstance(value, str):
        return None
    try:  # both ignore surrounding whitespace, as a tool's own parse would
        return float(value)
    except ValueError:
        pass
    try:
        return int(value, 0)
    except ValueError:
        return None


def numeric_test(op: Operator, expected: Any, restrictive: bool) -> Callable[[Any], bool]:
    """The predicate of ``value <op> expected`` for a restrictive or an allow rule."""
    compare = operator.lt if op is Operator.LT else operator.gt
    if not restrictive:

        def vouched(v: Any) -> bool:
            return (
                isinstance(v, (int, float))
                and not isinstance(v, bool)
                and (isinstance(v, int) or math.isfinite(v))
                and compare(v, expected)
            )

        return vouched

    def caught(v: Any) -> bool:
        number = as_number(v)
        if number is None:
            return False
        if isinstance(number, float) and not math.isfinite(number):
            return True
        return bool(compare(number, expected))

    return caught
