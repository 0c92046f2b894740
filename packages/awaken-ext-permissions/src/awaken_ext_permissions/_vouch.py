"""What an allow rule can vouch for: the safe default for undeclared string arguments.

A glob or regex in an ``allow`` rule is written for one plain value: a
command, a path, a name. A string it matches may still carry more than the
rule's author saw: a second command after ``;``, a redirection, a
``src/../etc`` that only *starts* like the allowed directory. So, unless the
argument is declared (``shell_arguments`` splits it into its commands,
``path_arguments`` normalizes it, ``text_arguments`` says it is plain text),
an allow condition holds only for a string that is :func:`plain`:

* no shell control operator: ``;``, ``&`` (so ``&&``), ``|`` (so ``||``),
  backticks, ``$(``, ``<``/``>`` redirections, and no line break of any kind
  (``\\n``, ``\\r``, the other separators :meth:`str.splitlines` knows, NUL);
* when it looks like a path (holds ``/`` or ``\\``): no empty, ``.`` or ``..``
  segment (``src//a``, ``src/./a``, ``src/../a``); a trailing separator is
  allowed. A URL (``scheme://host/...``) is checked on its (percent-decoded)
  path only;
* the same after NFKC normalization, so look-alikes (fullwidth semicolon,
  solidus and full stop, U+FF1B, U+FF0F, U+FF0E) that a tool may fold into
  the real characters fail too.

A value the rules cannot vouch for does not satisfy the allow; the call falls
through to the next rule or the default (``ask`` unless configured).
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["Vouched", "normalized_paths", "plain", "unnormal_path"]

# Shell control operators and every line break str.splitlines() or a shell honours.
_CONTROL = re.compile(r"[;&|`<>\n\r\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]|\$\(")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
_SEP = re.compile(r"[/\\]")
_ABNORMAL = frozenset({"", ".", ".."})
_CACHED = 4096
"""Strings up to this length are remembered (the last 4,096 of them)."""


class Vouched(str):
    """A string the policy already made safe to match: a declared shell part, a declared
    (normalized) path, or a declared text argument. :func:`plain` does not re-check it."""

    __slots__ = ()


def _path_is_normal(value: str) -> bool:
    url = _URL.match(value)
    if url is not None:
        # Only the path: the query and fragment are the server's, not the filesystem's.
        value = unquote(re.split(r"[?#]", value[url.end() :], maxsplit=1)[0])
    segments = _SEP.split(value)
    if segments[0] == "":  # absolute: the empty text before the first separator
        segments = segments[1:]
    if segments and segments[-1] == "":  # one trailing separator changes nothing
        segments = segments[:-1]
    return all(s not in _ABNORMAL for s in segments)


@functools.lru_cache(maxsize=4096)
def _plain(value: str) -> bool:
    if _CONTROL.search(value) is not None:
        return False
    if ("/" in value or "\\" in value) and not _path_is_normal(value):
        return False
    if not value.isascii():
        folded = unicodedata.normalize("NFKC", value)
        if folded != value:
            return _plain(folded)
    return True


def plain(value: Any) -> bool:
    """Whether an allow rule may vouch for ``value`` (non-strings and :class:`Vouched`: yes)."""
    if type(value) is not str:
        return True
    return _plain(value) if len(value) <= _CACHED else _plain.__wrapped__(value)


def unnormal_path(value: Any) -> str | None:
    """The normalized form of a path-looking string that is not normal, else ``None``.

    Deny and ask rules also see this form of an undeclared argument, so a deny on
    ``src/secrets/*`` catches ``src/./secrets/key``. Backslashes count as separators.
    """
    if type(value) is not str or ("/" not in value and "\\" not in value):
        return None
    if _URL.match(value) is not None or _path_is_normal(value):
        return None
    norm = posixpath.normpath(value.replace("\\", "/"))
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


def normalized_paths(
    args: Mapping[str, Any], skip: Collection[str] = ()
) -> tuple[dict[str, Any], str] | None:
    """``args`` with every top-level path-looking string (or list item) that is not
    normal replaced by its normalized form, and a note naming them; ``None`` if none.

    ``skip`` names declared arguments (they have views of their own).
    """
    alt: dict[str, Any] | None = None
    notes: list[str] = []
    for name, value in args.items():
        if name in skip:
            continue
        if isinstance(value, list):
            items = [unnormal_path(v) for v in value]
            if any(n is not None for n in items):
                alt = dict(args) if alt is None else alt
                alt[name] = [v if n is None else n for v, n in zip(value, items, strict=True)]
                notes.append(f"path {name} (normalized)")
            continue
        norm = unnormal_path(value)
        if norm is not None:
            alt = dict(args) if alt is None else alt
            alt[name] = norm
            notes.append(f"path {name}={norm!r} (normalized from {value!r})")
    return None if alt is None else (alt, "; ".join(notes))
