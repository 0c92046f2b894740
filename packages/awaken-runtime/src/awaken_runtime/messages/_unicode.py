"""Text that cannot be stored: lone surrogates, found and replaced at the boundaries.

Python strings may hold lone surrogates (``"\\ud800"``): ``json.loads`` makes
them from a ``\\ud800`` escape a provider sends, ``os.listdir`` from file
names that are not UTF-8. No store can encode them, so one such character in
a tool result or a model answer would make the step uncommittable. Text the
runtime does not control (model output, tool output) has them replaced with
U+FFFD where it enters the run; text the caller controls (run input, ids) is
refused with a typed error, since the caller can fix it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["REPLACEMENT", "first_unencodable", "scrub", "scrub_text"]

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes in text the runtime keeps."""


def scrub_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object if clean)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _replace(text)
    return text


def _replace(text: str) -> str:
    return "".join(REPLACEMENT if "\ud800" <= ch <= "\udfff" else ch for ch in text)


_MAX_DEPTH = 100
"""Deeper values are left as they are: the argument depth limit (64) refuses them anyway."""


def scrub(value: Any, depth: int = 0) -> Any:
    """``value`` (JSON-like: str, list, dict) with lone surrogates replaced everywhere.

    Returns the same object when nothing needed replacing, so a clean value
    costs one scan and no copy.
    """
    if isinstance(value, str):
        return scrub_text(value)
    if depth > _MAX_DEPTH:
        return value
    depth += 1
    if isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for key, item in value.items():
            new_key, new_item = scrub(key, depth), scrub(item, depth)
            if out is None and (new_key is not key or new_item is not item):
                out = {}
                for k, v in value.items():
                    if k is key:
                        break
                    out[k] = v
            if out is not None:
                out[new_key] = new_item
        return value if out is None else out
    if isinstance(value, (list, tuple)):
        items = [scrub(item, depth) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


def first_unencodable(value: Any, path: str = "") -> tuple[str, int] | None:
    """Where the first lone surrogate in ``value`` is: ``(path, index in that string)``."""
    if isinstance(value, str):
        if value.isascii():
            return None
        for index, ch in enumerate(value):
            if "\ud800" <= ch <= "\udfff":
                return path, index
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = first_unencodable(key, f"{path}.<key>") or first_unencodable(
                item, f"{path}.{key}" if path else str(key)
            )
            if found is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = first_unencodable(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None
