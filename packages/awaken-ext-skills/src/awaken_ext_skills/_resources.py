"""Loading a skill's files on demand: ``references/`` as text, ``assets/`` as base64."""

from __future__ import annotations

import base64
import codecs
import mimetypes
import os
from pathlib import Path
from typing import Any

from ._paths import PathRefused, confine
from ._skill import Skill

__all__ = ["RESOURCE_AREAS", "list_resources", "read_resource"]

RESOURCE_AREAS = ("references", "assets")
"""Folders of a skill that ``load_skill_resource`` may read."""


def read_resource(
    skill: Skill, path: str, *, max_text_bytes: int, max_asset_bytes: int
) -> dict[str, Any]:
    """Read ``path`` of ``skill`` as the JSON-ready result of ``load_skill_resource``.

    ``references/`` files are UTF-8 text, cut at ``max_text_bytes`` (on a
    character boundary) with ``truncated`` set. ``assets/`` files come back
    base64-encoded with a media type; a file over ``max_asset_bytes`` is
    refused (``too_large``), since half a binary is of no use. Raises
    :class:`PathRefused` for every refusal.
    """
    target = confine(skill.root, path, RESOURCE_AREAS)
    try:
        return _read(skill, path, target, max_text_bytes, max_asset_bytes)
    except OSError as exc:  # permissions, a file removed meanwhile, ...
        reason = exc.strerror or type(exc).__name__  # never the absolute path
        raise PathRefused("unreadable", f"cannot read {path!r}: {reason}") from None


def _read(
    skill: Skill, path: str, target: Path, max_text_bytes: int, max_asset_bytes: int
) -> dict[str, Any]:
    area = Path(path).parts[0]
    size = target.stat().st_size
    result: dict[str, Any] = {"skill": skill.name, "path": path, "size": size}
    if area == "assets":
        if size > max_asset_bytes:
            raise PathRefused(
                "too_large", f"{path!r} is {size} bytes; assets are capped at {max_asset_bytes}"
            )
        data = target.read_bytes()
        media_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        result.update(
            kind="asset",
            media_type=media_type,
            encoding="base64",
            content=base64.b64encode(data).decode("ascii"),
        )
        return result
    with target.open("rb") as handle:
        data = handle.read(max_text_bytes + 1)
    truncated = len(data) > max_text_bytes
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data[:max_text_bytes], final=not truncated)
    except UnicodeDecodeError as exc:
        raise PathRefused(
            "not_utf8", f"{path!r} is not UTF-8 text (byte {exc.start}); put binaries in assets/"
        ) from None
    result.update(kind="reference", encoding="utf-8", content=text, truncated=truncated)
    return result


def list_resources(skill: Skill, areas: tuple[str, ...], *, limit: int = 50) -> list[str]:
    """Up to ``limit`` relative file paths under ``areas`` of ``skill``, sorted.

    Symlinked folders are not entered (listing stays cheap and inside the skill).
    """
    found: list[str] = []
    for area in areas:
        base = skill.root / area
        if not base.is_dir() or base.is_symlink():
            continue
        for top, dirs, files in os.walk(base, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith("."):
                    continue
                if len(found) >= limit:
                    return found
                found.append(Path(top, name).relative_to(skill.root).as_posix())
    return found
