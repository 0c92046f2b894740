"""Errors and warnings of the skills extension."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from awaken_runtime import AwakenError

__all__ = ["DuplicateSkillError", "SkillError", "SkillProblem", "SkillWarning"]


class SkillError(AwakenError):
    """Base class of errors raised by the skills extension."""


class DuplicateSkillError(SkillError):
    """Two sources define a skill with the same name."""

    def __init__(self, name: str, first: str, second: str) -> None:
        self.name = name
        self.sources = (first, second)
        super().__init__(
            f"skill {name!r} is defined twice: by {first} and by {second}; "
            f"rename or remove one of them (skill names must be unique across sources)"
        )


class SkillWarning(UserWarning):
    """Issued (``warnings.warn``) for a skill that is invalid and left out, or that
    loaded with a caveat (an over-long description, unknown allowed-tools ids)."""


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """Why one skill folder (or source) was left out, or what is off about a loaded one."""

    path: Path
    """The file or folder at fault (usually a ``SKILL.md``)."""
    reason: str
    """What is wrong and how to fix it."""
    source: str = ""
    """The source the skill came from (config path, distribution, ...)."""
    left_out: bool = True
    """``False`` for a skill that loaded anyway (the problem is a caveat)."""

    def __str__(self) -> str:
        where = f" (from {self.source})" if self.source else ""
        what = "invalid skill" if self.left_out else "skill"
        return f"{what} {str(self.path)!r}{where}: {self.reason}"
