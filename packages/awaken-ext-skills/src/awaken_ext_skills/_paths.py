"""Confining a model-supplied relative path to one area of a skill folder.

The model names files relative to the skill folder (``references/guide.md``).
A path is refused with ``path_escapes_root`` when it is absolute (POSIX,
Windows drive or UNC), contains ``..`` segments or backslashes, would do any
of that once percent-decoded (``%2e%2e%2f``, ``%5c``; paths are never
decoded, but such a request is treated as the attack it is), or resolves
(following symlinks) to a place outside the skill folder. A path inside the
folder but outside the allowed areas is ``not_allowed``. A path the file
system cannot take (a component over 255 bytes, more than 1,024 bytes in all)
or cannot look at is ``invalid_path``; refusals never show the absolute path
of the skill on the server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from urllib.parse import unquote

__all__ = ["PathRefused", "confine"]

_DRIVE = re.compile(r"^[A-Za-z]:")
MAX_COMPONENT_BYTES = 255
"""Longest path component (UTF-8 bytes): NAME_MAX of common file systems."""
MAX_PATH_BYTES = 1024
"""Longest relative path accepted (UTF-8 bytes)."""


class PathRefused(Exception):
    """A refused or unusable path; ``code`` is a stable machine-readable reason."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


def _escapes(text: str) -> bool:
    if "\\" in text or text.startswith("/") or _DRIVE.match(text):
        return True
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).anchor:
        return True
    return ".." in PurePosixPath(text).parts


def _decodings(text: str) -> list[str]:
    found = [text]
    for _ in range(3):
        decoded = unquote(found[-1])
        if decoded == found[-1]:
            break
        found.append(decoded)
    return found


def confine(
    root: Path, relative: str, areas: Sequence[str], *, default_area: str | None = None
) -> Path:
    """The resolved file ``relative`` names inside ``root``/one of ``areas``.

    With ``default_area``, a bare file name is taken relative to that area
    (``run.py`` means ``scripts/run.py``).
    Raises :class:`PathRefused` with ``invalid_path``, ``path_escapes_root``,
    ``not_allowed``, ``not_found`` or ``not_a_file``.
    """
    if not relative or "\x00" in relative or not relative.strip():
        raise PathRefused("invalid_path", "give a relative path such as 'references/guide.md'")
    if any(_escapes(text) for text in _decodings(relative)):
        raise PathRefused(
            "path_escapes_root",
            f"{relative!r} leaves the skill folder; use a relative path without '..', "
            f"backslashes or a leading '/'",
        )
    _check_lengths(relative)
    parts = PurePosixPath(relative).parts
    if default_area is not None and len(parts) == 1 and parts[0] not in areas:
        relative = f"{default_area}/{relative}"
        parts = PurePosixPath(relative).parts
    where = " or ".join(f"{a}/" for a in areas)
    if len(parts) < 2 or parts[0] not in areas:
        raise PathRefused("not_allowed", f"{relative!r} is not under {where}")
    try:
        base = root.resolve()
        area = (root / parts[0]).resolve()
        target = (root / relative).resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise PathRefused("invalid_path", f"cannot resolve {relative!r}: {_why(exc)}") from None
    if not area.is_relative_to(base) or not target.is_relative_to(base):
        raise PathRefused(
            "path_escapes_root", f"{relative!r} resolves (through a symlink) outside the skill"
        )
    if not target.is_relative_to(area):
        raise PathRefused("not_allowed", f"{relative!r} resolves outside {parts[0]}/")
    try:
        exists, is_file = target.exists(), target.is_file()
    except OSError as exc:
        raise PathRefused("invalid_path", f"cannot look at {relative!r}: {_why(exc)}") from None
    if not exists:
        raise PathRefused("not_found", f"{relative!r} does not exist in this skill")
    if not is_file:
        raise PathRefused("not_a_file", f"{relative!r} is not a file")
    return target


def _check_lengths(relative: str) -> None:
    size = len(relative.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        raise PathRefused(
            "invalid_path", f"the path is {size} bytes long; at most {MAX_PATH_BYTES} allowed"
        )
    for part in PurePosixPath(relative).parts:
        size = len(part.encode("utf-8", "surrogatepass"))
        if size > MAX_COMPONENT_BYTES:
            raise PathRefused(
                "invalid_path",
                f"path component {part[:40]!r}... is {size} bytes long; at most "
                f"{MAX_COMPONENT_BYTES} allowed",
            )


def _why(exc: BaseException) -> str:
    # strerror, not str(exc): the latter carries the absolute server path.
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return "symlink loop" if isinstance(exc, RuntimeError) else type(exc).__name__
