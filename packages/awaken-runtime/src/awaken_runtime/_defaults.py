"""Default factories for pydantic fields that are cheap for pydantic to inspect.

pydantic reads the signature of every ``default_factory`` when it builds a
validator (does it take the validated data?). For the builtin ``list`` that
means parsing its text signature with ``tokenize``, whose first use in a
process compiles its regular expressions: ~20 ms once, then ~0.4 ms a field,
against a few microseconds for a Python function.
"""

from __future__ import annotations

from typing import Any

__all__ = ["new_list"]


def new_list() -> list[Any]:
    """A new empty list (the factory of a list field's default)."""
    return []
