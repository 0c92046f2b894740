"""A skill package: one folder with a SKILL.md, loaded and validated.

Layout::

    my-skill/
      SKILL.md        YAML frontmatter + markdown instructions (required)
      references/     text documents the model can load (load_skill_resource)
      assets/         binary files the model can load, base64 (load_skill_resource)
      scripts/        .py / .sh programs (skill_script, when scripts are enabled)
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import SkillError, SkillProblem
from ._frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_SKILL_MD_BYTES",
    "SKILL_FILE",
    "InvalidSkillError",
    "Skill",
    "SkillArgument",
    "load_skill",
    "stat_stamp",
]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill."""
MAX_SKILL_MD_BYTES = 256 * 1024
"""A SKILL.md larger than this is refused (keep big material in references/)."""
MAX_ARGUMENT_CHARS = 4096
"""Longest value accepted for one activation argument."""

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_-]*)\}")
Stamp = tuple[int, int, int]


def stat_stamp(st: os.stat_result) -> Stamp:
    """The cheap change detector of a file: ``(mtime_ns, size, inode)``."""
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class InvalidSkillError(SkillError):
    """A skill folder that cannot be loaded; ``problem`` says where and why."""

    def __init__(self, problem: SkillProblem) -> None:
        self.problem = problem
        super().__init__(str(problem))


@dataclass(frozen=True, slots=True)
class SkillArgument:
    """An argument a skill declares; activation values replace ``${name}`` in the body."""

    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class Skill:
    """A validated skill package.

    ``fingerprint`` is the sha256 of the SKILL.md bytes: an activation
    remembers it, and a mismatch later (the file changed) deactivates the
    skill. ``stamp`` is the file's ``(mtime_ns, size, inode)`` when read, used
    to notice changes without re-reading. ``description`` is kept in full;
    the catalog shows at most ``MAX_DESCRIPTION_CHARS`` of it.
    """

    name: str
    description: str
    root: Path
    body: str
    when_to_use: str | None = None
    allowed_tools: tuple[str, ...] = ()
    arguments: tuple[SkillArgument, ...] = ()
    license: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict, hash=False)
    source: str = ""
    fingerprint: str = ""
    stamp: Stamp = (0, 0, 0)
    notes: tuple[str, ...] = ()
    """Caveats of a skill that loaded, but not entirely as written (each is warned about)."""

    @property
    def skill_md(self) -> Path:
        """Path of this skill's SKILL.md."""
        return self.root / SKILL_FILE

    def bind_arguments(self, given: Mapping[str, Any] | None) -> dict[str, str]:
        """Check activation arguments against the declared ones.

        Values may be strings, numbers or booleans (numbers and booleans are
        turned into their JSON text). Raises ``ValueError`` naming every
        unknown, missing or malformed argument.
        """
        given = given or {}
        declared = {a.name: a for a in self.arguments}
        problems: list[str] = []
        unknown = sorted(set(given) - set(declared))
        if unknown:
            names = ", ".join(repr(n) for n in sorted(declared)) or "none"
            problems.append(
                f"unknown argument(s) {', '.join(repr(u) for u in unknown)} (declared: {names})"
            )
        bound: dict[str, str] = {}
        for name, arg in declared.items():
            if name not in given or given[name] is None:
                if arg.required:
                    problems.append(f"missing required argument {name!r} ({arg.description})")
                continue
            value = given[name]
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (str, int, float)):
                text = str(value)
            else:
                problems.append(f"argument {name!r} must be a string, number or boolean")
                continue
            if len(text) > MAX_ARGUMENT_CHARS:
                problems.append(f"argument {name!r} is longer than {MAX_ARGUMENT_CHARS} chars")
                continue
            bound[name] = text
        if problems:
            raise ValueError("; ".join(problems))
        return bound

    def render(self, arguments: Mapping[str, str]) -> str:
        """The body with ``${name}`` replaced for every declared argument.

        A declared optional argument that was not given becomes empty text;
        placeholders that name no declared argument are left as written.
        """
        if not self.arguments:
            return self.body
        declared = {a.name for a in self.arguments}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in declared:
                return match.group(0)
            return arguments.get(name, "")

        return _PLACEHOLDER.sub(replace, self.body)


def load_skill(folder: str | os.PathLike[str], *, source: str = "") -> Skill:
    """Load and validate the skill in ``folder``.

    Raises :class:`InvalidSkillError` (with the file and the reason) when the
    folder has no readable SKILL.md or the frontmatter breaks a rule.
    """
    given = Path(folder).absolute()
    root = given.resolve()
    skill_md = root / SKILL_FILE

    def fail(reason: str, path: Path = skill_md) -> InvalidSkillError:
        return InvalidSkillError(SkillProblem(path=path, reason=reason, source=source))

    try:
        st = skill_md.stat()
        if not skill_md.is_file():
            raise fail("SKILL.md is not a regular file")
        if st.st_size > MAX_SKILL_MD_BYTES:
            raise fail(
                f"SKILL.md is {st.st_size} bytes; at most {MAX_SKILL_MD_BYTES} allowed "
                f"(move long material to references/)"
            )
        raw = skill_md.read_bytes()
    except FileNotFoundError:
        raise fail("the folder has no SKILL.md", root) from None
    except OSError as exc:
        raise fail(f"cannot read SKILL.md: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"SKILL.md is not UTF-8 text (byte {exc.start})") from None
    try:
        header, body = split_frontmatter(text)
        meta = parse_frontmatter(header)
    except FrontmatterError as exc:
        raise fail(str(exc)) from None
    if meta.name != given.name:
        raise fail(f"name {meta.name!r} does not match the folder name {given.name!r}")
    return Skill(
        name=meta.name,
        description=meta.description.strip(),
        root=root,
        body=body.strip("\n"),
        when_to_use=meta.when_to_use.strip() if meta.when_to_use else None,
        allowed_tools=meta.tool_ids,
        arguments=tuple(SkillArgument(a.name, a.description, a.required) for a in meta.arguments),
        license=meta.license,
        metadata=dict(meta.metadata),
        source=source,
        fingerprint=hashlib.sha256(raw).hexdigest()[:32],
        stamp=stat_stamp(st),
        notes=meta.notes,
    )
