"""What a state value may be: JSON that every store writes and reads back equal.

A value is committed to a store as JSON and read back by JSON parsers with
their own limits (pydantic's parser refuses nesting past 200 levels, other
readers past 128). So a state value is limited where a store could write it
but not read it back, or read back something else:

- containers (objects, arrays) nest at most :data:`MAX_STATE_DEPTH` levels
  (the value itself is level 1), the same limit as tool-call arguments;
- strings and object keys are valid Unicode (no lone surrogates, which no
  UTF-8 store can hold);
- numbers are finite (JSON has no NaN or infinity: they would come back ``null``);
- object keys are strings (others would come back as strings);
- only ``None``, booleans, numbers, strings, lists (tuples come back as lists)
  and dicts.

``Command.set`` refuses such a value at once (``StateValueError`` naming the
key), and every built-in store refuses a commit holding one, writing nothing.
There is no size limit beyond what the backend holds.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_STATE_DEPTH", "unstorable"]

MAX_STATE_DEPTH = 64
"""How deeply the objects and arrays of a state value may nest (the value is level 1)."""

_SCALARS = (bool, int, type(None))


def _bad_text(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def unstorable(value: Any) -> str | None:
    """Why ``value`` cannot be stored as JSON and read back equal, or ``None`` if it can."""
    if isinstance(value, _SCALARS):
        return None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:  # iterative: a recursive walk would itself overflow on poison input
        item, depth = stack.pop()
        if isinstance(item, str):
            if _bad_text(item):
                return "holds a string that is not valid Unicode (a lone surrogate)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"holds the number {item!r}, which JSON cannot represent"
        elif isinstance(item, (list, tuple)):
            if depth > MAX_STATE_DEPTH:
                return _too_deep()
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, dict):
            if depth > MAX_STATE_DEPTH:
                return _too_deep()
            for key, child in item.items():
                if not isinstance(key, str):
                    return f"has the object key {key!r}, which is not a string"
                if _bad_text(key):
                    return "has an object key that is not valid Unicode (a lone surrogate)"
                stack.append((child, depth + 1))
        elif not isinstance(item, _SCALARS):
            return f"holds a {type(item).__name__}, which is not a JSON value"
    return None


def _too_deep() -> str:
    return f"nests objects and arrays deeper than {MAX_STATE_DEPTH} levels"
