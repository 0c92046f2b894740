"""Shell- and path-aware arguments: the views of a call that rules are matched against.

An argument declared as a **shell command** (``shell_arguments``) is split
into its simple commands by :mod:`._shell` (bashlex, with a checked fast
path), each as written and as bash reads it. A call is allowed only when
*every* part is allowed; any part a deny rule matches denies. Text that cannot
be checked is not guessed at: it is ``unparsable_shell`` (``ask`` unless set).

An argument declared as a **path** (``path_arguments``) is normalized before
matching: ``.`` and ``..`` segments, repeated separators and trailing slashes
go (``src/./secrets//key/`` is ``src/secrets/key``). With ``path_root`` the
path is resolved against that root with symlinks followed and matched as the
root-relative path; a path that leaves the root is denied. With
``path_case_insensitive`` paths are case-folded (and the root compared
ignoring case), and :func:`casefold_rule` folds the rules' conditions on them.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._model import Condition, Operator, Rule
from ._shell import split_shell
from ._vouch import Vouched

__all__ = ["ArgumentViews", "Views", "casefold_rule", "normalize_path", "split_shell"]

_MAX_VIEWS = 256
"""More combinations than this (several compound shell arguments) is unparsable."""


def normalize_path(
    value: str, root: str | None = None, case_insensitive: bool = False
) -> str | None:
    """``value`` without ``.``/``..``/``//``/trailing ``/``; root-relative with ``root``.

    Returns ``None`` when ``root`` is given and the path resolves outside it.
    With ``case_insensitive`` (a filesystem that ignores case: macOS, Windows)
    the result is case-folded and the root is compared ignoring case.
    """
    if root is None:
        norm = posixpath.normpath(value) if value else value
        # POSIX keeps a leading "//"; for matching it is the same as "/".
        norm = "/" + norm.lstrip("/") if norm.startswith("//") else norm
        return norm.casefold() if case_insensitive else norm
    base = os.path.realpath(root).rstrip(os.sep) or os.sep
    full = os.path.realpath(os.path.join(base, value))
    fold = str.casefold if case_insensitive else str
    if fold(full) == fold(base):
        return "."
    inside = base if base.endswith(os.sep) else base + os.sep
    if not fold(full).startswith(fold(inside)):
        return None
    return fold(full[len(inside) :].replace(os.sep, "/"))


def casefold_rule(rule: Rule, names: Sequence[str]) -> Rule:
    """``rule`` with its conditions on the top-level arguments ``names`` ignoring case.

    String values are case-folded (the argument is folded too) and regexes get
    ``re.IGNORECASE``; other conditions are unchanged.
    """
    when = tuple(
        _fold(c) if c.path and c.path[0].key in names and isinstance(c.value, (str, list)) else c
        for c in rule.when
    )
    return rule if when == rule.when else dataclasses.replace(rule, when=when)


def _fold(condition: Condition) -> Condition:
    value = condition.value
    if condition.op in (Operator.REGEX, Operator.NOT_REGEX):
        scoped = f"(?i:{value})"
        try:
            re.compile(scoped)
        except re.error:  # the regex starts with global flags: add ours beside them
            scoped = f"(?i){value}"
        return dataclasses.replace(condition, value=scoped)
    if isinstance(value, list):
        value = [v.casefold() if isinstance(v, str) else v for v in value]
    else:
        value = value.casefold()
    return dataclasses.replace(condition, value=value)


@dataclass(frozen=True, slots=True)
class Views:
    """The argument dicts to match for one call, each with what it shows, or a problem."""

    items: tuple[tuple[Mapping[str, Any], str], ...]
    problem: str = ""
    """Why the call cannot be matched (unparsable command, path outside the root)."""
    escaped: bool = False
    """Whether the problem is a path outside the root (always denied)."""


def _names(table: Mapping[str, Sequence[str]], tool: str) -> tuple[str, ...]:
    out: list[str] = []
    for pattern, names in table.items():
        if pattern == tool or fnmatch.fnmatchcase(tool, pattern):
            out.extend(n for n in names if n not in out)
    return tuple(out)


class ArgumentViews:
    """Which arguments of which tools are shell commands or paths; builds :class:`Views`."""

    def __init__(
        self,
        shell: Mapping[str, Sequence[str]],
        paths: Mapping[str, Sequence[str]],
        root: str | None = None,
        case_insensitive: bool = False,
        text: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.shell = {k: tuple(v) for k, v in shell.items()}
        self.paths = {k: tuple(v) for k, v in paths.items()}
        self.text = {k: tuple(v) for k, v in (text or {}).items()}
        self.root = root
        self.case_insensitive = case_insensitive
        self._cache: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._texts: dict[str, tuple[str, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.shell or self.paths or self.text)

    def texts(self, tool: str) -> tuple[str, ...]:
        """The arguments of ``tool`` declared plain text (matched as written, unchecked)."""
        found = self._texts.get(tool)
        if found is None:
            if len(self._texts) > 4096:
                self._texts.clear()
            found = self._texts[tool] = _names(self.text, tool)
        return found

    def declared(self, tool: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(shell argument names, path argument names)`` of ``tool`` (cached)."""
        found = self._cache.get(tool)
        if found is None:
            if len(self._cache) > 4096:
                self._cache.clear()
            found = (_names(self.shell, tool), _names(self.paths, tool))
            self._cache[tool] = found
        return found

    def of(self, tool: str, args: Mapping[str, Any]) -> Views | None:
        """The views of ``tool(args)``, or ``None`` when it declares no special argument."""
        shell, paths = self.declared(tool)
        texts = self.texts(tool) if self.text else ()
        if not shell and not paths and not texts:
            return None
        base = dict(args)
        notes: list[str] = []
        for name in texts:
            value = base.get(name)
            if isinstance(value, str):
                base[name] = Vouched(value)
        for name in paths:
            value = base.get(name)
            if isinstance(value, str):
                norm = self._path(value)
                if norm is None:
                    return _escape(name, value, self.root)
                if norm != value:
                    notes.append(f"path {name}={norm!r} (normalized from {value!r})")
                base[name] = Vouched(norm)
            elif isinstance(value, list):
                normalized: list[Any] = []
                for item in value:
                    if isinstance(item, str):
                        norm = self._path(item)
                        if norm is None:
                            return _escape(name, item, self.root)
                        item = Vouched(norm)
                    normalized.append(item)
                base[name] = normalized
        splits: list[list[tuple[str, str]]] = []
        for name in shell:
            value = base.get(name)
            if not isinstance(value, str):
                continue
            try:
                parts = split_shell(value)
            except ValueError as exc:
                return Views(((base, ""),), problem=f"argument {name!r}: {exc}")
            splits.append([(name, Vouched(p)) for p in parts])
        note = "; ".join(notes)
        if not splits:
            return Views(((base, note),))
        total = 1
        for options in splits:
            total *= len(options)
        if total > _MAX_VIEWS:
            return Views(((base, ""),), problem=f"more than {_MAX_VIEWS} command combinations")
        if len(splits) == 1 and not note:  # the common case: one command line, nothing else
            options = splits[0]
            if len(options) == 1:
                return Views((({**base, options[0][0]: options[0][1]}, ""),))
            return Views(tuple(({**base, n: p}, f"part {p!r} of {n}") for n, p in options))
        items: list[tuple[Mapping[str, Any], str]] = []
        compound = any(len(o) > 1 for o in splits)
        for combo in itertools.product(*splits):
            view = dict(base)
            shown = [note] if note else []
            for name, part in combo:
                view[name] = part
                if compound:
                    shown.append(f"part {part!r} of {name}")
            items.append((view, "; ".join(shown)))
        return Views(tuple(items))

    def _path(self, value: str) -> str | None:
        return normalize_path(value, self.root, self.case_insensitive)


def _escape(name: str, value: str, root: str | None) -> Views:
    return Views((), problem=f"path {name}={value!r} is outside the root {root!r}", escaped=True)
