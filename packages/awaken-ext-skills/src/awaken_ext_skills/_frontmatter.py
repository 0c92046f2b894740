"""SKILL.md frontmatter: splitting the YAML header off and validating it.

The header is parsed with PyYAML's safe loader (the libyaml one when
available) and validated with a strict pydantic model: every value must have
the declared type as written (no coercion), unknown keys are ignored.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "ArgumentSpec",
    "Frontmatter",
    "FrontmatterError",
    "parse_frontmatter",
    "parse_tool_list",
    "split_frontmatter",
]

MAX_NAME_CHARS = 64
"""Longest allowed skill name."""
MAX_DESCRIPTION_CHARS = 1024
"""Longest description (and when-to-use text) shown in full; longer ones load with
a warning and are cut to this length in the catalog."""
MAX_TEXT_CHARS = 64 * 1024
"""Longest description or when-to-use text accepted at all."""

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_TOOL_ID = re.compile(r"[A-Za-z0-9_\-.]{1,128}")
# One entry of a tool list: an id, optionally followed by a Claude Code style
# argument pattern in parentheses (``Bash(git status:*)``), which may hold spaces.
_TOOL_ENTRY = re.compile(r"([^\s,()]+)(\([^()]*\))?|([()])")
_FENCES = ("---", "...")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontmatterError(ValueError):
    """The header is missing, is not YAML, or breaks a rule (message says which)."""


class ArgumentSpec(BaseModel):
    """One declared argument of a skill (an entry of ``arguments``)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    name: str
    description: str = Field(default="", max_length=MAX_DESCRIPTION_CHARS)
    required: bool = False

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _ARG_NAME.fullmatch(value):
            raise ValueError(
                "argument names start with a letter or '_' and hold letters, digits, '_' "
                "or '-' (at most 64 characters)"
            )
        return value


class Frontmatter(BaseModel):
    """The validated YAML header of a SKILL.md."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    name: str
    description: str = Field(max_length=MAX_TEXT_CHARS)
    allowed_tools: str | list[str] | None = Field(default=None, alias="allowed-tools")
    when_to_use: str | None = Field(default=None, alias="when-to-use", max_length=MAX_TEXT_CHARS)
    arguments: list[ArgumentSpec] = Field(default_factory=list)
    license: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if len(value) > MAX_NAME_CHARS:
            raise ValueError(f"is {len(value)} characters long; at most {MAX_NAME_CHARS} allowed")
        if not _NAME.fullmatch(value):
            raise ValueError(
                "must be lowercase letters, digits and single hyphens, not starting or "
                "ending with a hyphen (e.g. 'pdf-forms')"
            )
        return value

    @field_validator("description")
    @classmethod
    def _check_description(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("allowed_tools", mode="before")
    @classmethod
    def _check_tools_type(cls, value: Any) -> Any:
        ok_list = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if value is not None and not isinstance(value, str) and not ok_list:
            raise ValueError(
                "must be tool ids separated by commas or spaces, e.g. 'Read, Grep' or a YAML list"
            )
        return value

    @field_validator("allowed_tools")
    @classmethod
    def _check_tools(cls, value: str | list[str] | None) -> str | list[str] | None:
        parse_tool_list(value)
        return value

    @field_validator("arguments")
    @classmethod
    def _check_unique(cls, value: list[ArgumentSpec]) -> list[ArgumentSpec]:
        seen: set[str] = set()
        for arg in value:
            if arg.name in seen:
                raise ValueError(f"argument {arg.name!r} is declared twice")
            seen.add(arg.name)
        return value

    @property
    def tool_ids(self) -> tuple[str, ...]:
        """``allowed-tools`` as a tuple of tool ids (in the order written, deduplicated)."""
        return parse_tool_list(self.allowed_tools)[0]

    @property
    def notes(self) -> tuple[str, ...]:
        """Caveats of a header that loads but not entirely as written (for warnings)."""
        notes: list[str] = list(parse_tool_list(self.allowed_tools)[1])
        for key, text in (("description", self.description), ("when-to-use", self.when_to_use)):
            if text is not None and len(text.strip()) > MAX_DESCRIPTION_CHARS:
                notes.append(
                    f"{key!r} is {len(text.strip())} characters; the catalog shows the first "
                    f"{MAX_DESCRIPTION_CHARS} (shorten it so the model sees all of it)"
                )
        return tuple(notes)


def parse_tool_list(value: str | list[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``allowed-tools`` as ``(tool_ids, notes)``.

    Accepts the forms skill files use in the wild: ids separated by spaces
    (Agent Skills), by commas (Claude Code: ``Read, Grep, Glob``) or both, or
    a YAML list. An argument pattern such as ``Bash(git status:*)`` names
    the tool ``Bash``; the pattern itself is not enforced (a note says so).
    Raises ``ValueError`` for an entry that is not a tool id.
    """
    if value is None:
        return (), ()
    items = [value] if isinstance(value, str) else value
    ids: list[str] = []
    patterns: list[str] = []
    bad: list[str] = []
    for item in items:
        for found in _TOOL_ENTRY.finditer(item):
            name, pattern, stray = found.groups()
            if stray:  # an unbalanced parenthesis
                bad.append(stray)
            elif _TOOL_ID.fullmatch(name):
                ids.append(name)
            else:
                bad.append(name)
            if pattern:
                patterns.append(name + pattern)
    if bad:
        raise ValueError(
            f"{', '.join(repr(b) for b in bad)} {'is' if len(bad) == 1 else 'are'} not "
            f"tool ids (letters, digits, '_', '-', '.'); separate ids with commas or spaces"
        )
    notes = (
        (
            f"allowed-tools patterns {', '.join(repr(p) for p in patterns)} are read as "
            f"their tool ids only; the argument patterns are not enforced (use the "
            f"permissions plugin to restrict arguments)",
        )
        if patterns
        else ()
    )
    return tuple(dict.fromkeys(ids)), notes


def split_frontmatter(text: str) -> tuple[str, str]:
    """Split SKILL.md text into ``(yaml_header, markdown_body)``.

    The file must start with a ``---`` line; the header ends at the next
    ``---`` (or ``...``) line.
    """
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontmatterError("SKILL.md must start with a '---' line opening the YAML frontmatter")
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FENCES:
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise FrontmatterError("the YAML frontmatter is not closed by a '---' line")


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "frontmatter"
        if err["type"] == "missing":
            problems.append(f"missing required key {loc!r}")
        else:
            message = err["msg"].removeprefix("Value error, ")
            problems.append(
                f"{loc!r} {message}" if err["type"] == "value_error" else f"{loc!r}: {message}"
            )
    return "; ".join(problems)


def parse_frontmatter(header: str) -> Frontmatter:
    """Parse and validate a YAML header (raises :class:`FrontmatterError`)."""
    try:
        data = yaml.load(header, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"the frontmatter is not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterError(
            f"the frontmatter must be a mapping of keys to values, not {type(data).__name__}"
        )
    try:
        return Frontmatter.model_validate(data)
    except ValidationError as exc:
        raise FrontmatterError(_describe(exc)) from None
