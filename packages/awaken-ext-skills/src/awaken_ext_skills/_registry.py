"""Finding skills: configured folders, skill packs of installed distributions,
and programmatic registration; cached until refreshed.

A *source* is a folder. If it holds a ``SKILL.md`` it is one skill; otherwise
every sub-folder is a skill (names starting with ``.`` or ``_``, such as
``__pycache__``, are skipped). Invalid skills become :class:`SkillProblem`
entries (also issued as :class:`SkillWarning`) and are left out; the same
name from two different folders is a :class:`DuplicateSkillError`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from awaken_runtime import discover

from ._errors import DuplicateSkillError, SkillProblem, SkillWarning
from ._skill import SKILL_FILE, InvalidSkillError, Skill, load_skill, stat_stamp

__all__ = ["PACK_HOOK", "SkillRegistry", "SkillSource", "pack_sources"]

PACK_HOOK = "register_skills"
"""The awaken hook through which distributions publish skill packs."""


@dataclass(frozen=True, slots=True)
class SkillSource:
    """A folder to read skills from, with a label naming where it came from."""

    path: Path
    label: str


def pack_sources() -> tuple[list[SkillSource], list[SkillProblem]]:
    """Skill packs registered through ``register_skills(register)`` by installed distributions."""
    sources: list[SkillSource] = []
    problems: list[SkillProblem] = []
    for item in discover().extras.get(PACK_HOOK, []):
        who = f"entry point {item.source!r}"
        if item.distribution:
            who = f"distribution {item.distribution!r} ({who})"
        if isinstance(item.value, (str, os.PathLike)):
            sources.append(SkillSource(Path(item.value), who))
        else:
            problems.append(
                SkillProblem(
                    path=Path(str(item.value)),
                    reason="register_skills needs a filesystem path (str or os.PathLike), "
                    f"got {type(item.value).__name__}",
                    source=who,
                )
            )
    return sources, problems


class SkillRegistry:
    """The skills of a set of sources, read once and cached.

    ``paths`` are folders (a skill, or a folder of skills); with ``packs``
    the skill packs of installed distributions are read too. Reading happens
    on first use; :meth:`refresh` reads everything again. :meth:`check`
    notices a changed SKILL.md of one skill by its file stamp, so callers can
    keep activations honest without rescanning. ``generation`` changes
    whenever the set of skills changes.
    """

    def __init__(self, paths: Iterable[str | os.PathLike[str]] = (), *, packs: bool = True) -> None:
        self._sources = [SkillSource(Path(p), f"path {str(p)!r}") for p in paths]
        self._packs = packs
        self._skills: dict[str, Skill] | None = None
        self._folders: dict[str, Path] = {}
        self._files: dict[str, str] = {}  # name -> SKILL.md path, for a cheap stat
        self._ordered: tuple[Skill, ...] = ()
        self._generation = 0
        self.problems: list[SkillProblem] = []
        """Why skills were left out at the last read (plus later :meth:`check` drops)."""
        self.notices: list[SkillProblem] = []
        """Caveats of skills that loaded (``left_out=False``): over-long descriptions,
        argument patterns in allowed-tools, allowed-tools ids an agent does not have."""

    # -- sources -----------------------------------------------------------

    def add(self, path: str | os.PathLike[str], *, label: str | None = None) -> None:
        """Register a folder programmatically (re-reads at once if already read)."""
        self._sources.append(SkillSource(Path(path), label or f"registered path {str(path)!r}"))
        if self._skills is not None:
            self.refresh()

    @property
    def sources(self) -> list[SkillSource]:
        """The configured and registered folders (packs are looked up at each read)."""
        return list(self._sources)

    # -- reading -------------------------------------------------------------

    def refresh(self) -> None:
        """Read every source again; on a duplicate name nothing changes and it raises."""
        problems: list[SkillProblem] = []
        sources = list(self._sources)
        if self._packs:
            found, bad = pack_sources()
            sources.extend(found)
            problems.extend(bad)
        skills: dict[str, tuple[Skill, Path]] = {}
        seen_roots: set[Path] = set()
        for source in sources:
            for folder in _skill_folders(source, problems):
                try:
                    skill = load_skill(folder, source=source.label)
                except InvalidSkillError as exc:
                    problems.append(exc.problem)
                    continue
                if skill.root in seen_roots:
                    continue  # the same folder reached through two sources
                seen_roots.add(skill.root)
                first = skills.get(skill.name)
                if first is not None:
                    raise DuplicateSkillError(
                        skill.name,
                        f"{str(first[0].skill_md)!r} ({first[0].source})",
                        f"{str(skill.skill_md)!r} ({source.label})",
                    )
                skills[skill.name] = (skill, folder)
        self._skills = {name: s for name, (s, _f) in skills.items()}
        self._folders = {name: f for name, (_s, f) in skills.items()}
        self._files = {name: str(s.skill_md) for name, (s, _f) in skills.items()}
        self._reorder()
        self.problems = problems
        for problem in problems:
            warnings.warn(SkillWarning(str(problem)), stacklevel=2)
        self.notices = []
        for skill in self._ordered:
            self._note_skill(skill)

    def notice(self, skill: Skill, reason: str) -> None:
        """Record (once) and warn about a caveat of a loaded skill."""
        problem = SkillProblem(skill.skill_md, reason, skill.source, left_out=False)
        if problem not in self.notices:
            self.notices.append(problem)
            warnings.warn(SkillWarning(str(problem)), stacklevel=3)

    def _note_skill(self, skill: Skill) -> None:
        for note in skill.notes:
            self.notice(skill, note)

    def _loaded(self) -> dict[str, Skill]:
        if self._skills is None:
            self.refresh()
        assert self._skills is not None
        return self._skills

    def _reorder(self) -> None:
        skills = self._skills or {}
        self._ordered = tuple(skills[name] for name in sorted(skills))
        self._generation += 1

    @property
    def generation(self) -> int:
        """A counter that changes whenever the set or content of skills changes."""
        self._loaded()
        return self._generation

    @property
    def skills(self) -> Mapping[str, Skill]:
        """Read-only ``{name: Skill}``."""
        return MappingProxyType(self._loaded())

    @property
    def ordered(self) -> tuple[Skill, ...]:
        """Every skill, sorted by name."""
        self._loaded()
        return self._ordered

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` as last read, or ``None``."""
        return self._loaded().get(name)

    def __len__(self) -> int:
        return len(self._loaded())

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.ordered)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def check(self, name: str) -> Skill | None:
        """The current version of ``name``, re-reading its SKILL.md if it changed on disk.

        A skill whose SKILL.md vanished or became invalid is dropped (with a
        problem and a warning) and ``None`` is returned. Cost when nothing
        changed: one ``stat``.
        """
        skills = self._loaded()
        skill = skills.get(name)
        if skill is None:
            return None
        try:
            stamp = stat_stamp(os.stat(self._files[name]))
        except OSError:
            stamp = None
        if stamp == skill.stamp:
            return skill
        try:
            fresh = load_skill(self._folders[name], source=skill.source)
        except InvalidSkillError as exc:
            del skills[name]
            del self._folders[name]
            del self._files[name]
            self.problems.append(exc.problem)
            warnings.warn(SkillWarning(str(exc.problem)), stacklevel=2)
            self._reorder()
            return None
        skills[name] = fresh
        if fresh.fingerprint != skill.fingerprint:
            self._note_skill(fresh)
            self._reorder()
        return fresh


def _skill_folders(source: SkillSource, problems: list[SkillProblem]) -> list[Path]:
    path = source.path
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        problems.append(SkillProblem(path=path, reason=f"skill source {what}", source=source.label))
        return []
    if (path / SKILL_FILE).is_file():
        return [path]
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        problems.append(
            SkillProblem(path=path, reason=f"cannot list: {exc.strerror}", source=source.label)
        )
        return []
    return [
        Path(e.path) for e in entries if e.name[0] not in "._" and e.is_dir(follow_symlinks=True)
    ]
