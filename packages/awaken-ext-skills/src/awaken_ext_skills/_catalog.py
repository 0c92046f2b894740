"""The compact skill catalog injected before inference.

One line per skill, sorted by name: name, description and when-to-use. The
text of each entry is escaped (whitespace collapsed to single spaces, ``&``,
``<`` and ``>`` as XML entities) so a description cannot break out of its
entry or the catalog. ``max_entries`` and ``max_bytes`` (UTF-8 size of the
whole catalog text) bound it; the first entry is always shown, and a note
says how many were left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ._frontmatter import MAX_DESCRIPTION_CHARS
from ._skill import Skill

__all__ = ["render_catalog", "render_entry"]

_HEADER = (
    "<available_skills>\n"
    "Skills hold instructions and files for specific tasks. When a task matches a skill, "
    "call the `skill` tool with its name to load its instructions before you start.\n"
)
_FOOTER = "</available_skills>"


def _clean(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "\u2026"
    return escape(text, quote=False)


def render_entry(skill: Skill) -> str:
    """One catalog line for ``skill`` (with its trailing newline).

    A description or when-to-use text longer than ``MAX_DESCRIPTION_CHARS``
    (after collapsing whitespace) is cut to that length, ending in ``…``.
    """
    text = _clean(skill.description)
    if skill.when_to_use:
        text += f" When to use: {_clean(skill.when_to_use)}"
    return f'<skill name="{escape(skill.name)}">{text}</skill>\n'


def _note(hidden: int) -> str:
    return (
        f"({hidden} more skill{'s are' if hidden != 1 else ' is'} installed but not listed; "
        f"call `skill` with an exact name if the user asks for one.)\n"
    )


def render_catalog(skills: Sequence[Skill], *, max_entries: int, max_bytes: int) -> str | None:
    """The catalog text for ``skills`` (already sorted), or ``None`` when there are none."""
    if not skills:
        return None
    total = len(skills)
    parts = [_HEADER]
    size = len(_HEADER.encode()) + len(_FOOTER.encode())
    reserve = len(_note(total).encode())  # the note is never longer than this
    shown = 0
    for skill in skills[:max_entries]:
        entry = render_entry(skill)
        cost = len(entry.encode())
        rest = total - shown - 1
        if shown and size + cost + (reserve if rest else 0) > max_bytes:
            break
        parts.append(entry)
        size += cost
        shown += 1
    if shown < total:
        parts.append(_note(total - shown))
    parts.append(_FOOTER)
    return "".join(parts)
