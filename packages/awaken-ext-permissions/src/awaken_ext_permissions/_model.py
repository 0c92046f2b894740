"""The rule model: behaviors, operators, argument paths, conditions and rules.

A :class:`Rule` says what to do (``allow``, ``deny`` or ``ask``) with calls of
the tools its pattern names whose arguments satisfy every condition in
``when``. Rules are plain frozen values; :mod:`._matchers` compiles them and
:mod:`._policy` decides between them.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OPERATOR_PRECISION",
    "TOOL_KIND_RANK",
    "Behavior",
    "Condition",
    "Operator",
    "Rule",
    "Segment",
    "ToolKind",
    "render_path",
]


class Behavior(enum.StrEnum):
    """What a rule does with a call it matches."""

    ALLOW = "allow"
    """Run the call (other gates may still object)."""
    DENY = "deny"
    """Block the call with a model-visible error."""
    ASK = "ask"
    """Suspend the call until a human approves or denies it."""


class Operator(enum.StrEnum):
    """How a condition compares an argument with its value."""

    EQ = "="
    NE = "!="
    GLOB = "~"
    NOT_GLOB = "!~"
    REGEX = "=~"
    NOT_REGEX = "!=~"
    IN = "in"
    LT = "<"
    GT = ">"


OPERATOR_PRECISION: dict[Operator, int] = {
    Operator.EQ: 5,
    Operator.IN: 4,
    Operator.GLOB: 3,
    Operator.REGEX: 2,
    Operator.LT: 2,
    Operator.GT: 2,
    Operator.NE: 1,
    Operator.NOT_GLOB: 1,
    Operator.NOT_REGEX: 1,
}
"""How narrowly an operator pins a value (higher is more precise); breaks ties."""


class ToolKind(enum.StrEnum):
    """How a rule names its tools."""

    EXACT = "exact"
    GLOB = "glob"
    REGEX = "regex"


TOOL_KIND_RANK: dict[ToolKind, int] = {ToolKind.EXACT: 3, ToolKind.GLOB: 2, ToolKind.REGEX: 1}
"""Exact ids are more specific than globs, globs more than regexes."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One step of an argument path: a key, a list index, or ``[*]`` (``key is None``)."""

    key: str | int | None

    @property
    def wildcard(self) -> bool:
        """Whether this is ``[*]`` (every element of a list or value of an object)."""
        return self.key is None


def render_path(segments: tuple[Segment, ...]) -> str:
    """The canonical text of a path: ``a.b``, ``items[0]``, ``items[*]``, ``["odd key"]``."""
    out: list[str] = []
    for seg in segments:
        key = seg.key
        if key is None:
            out.append("[*]")
        elif isinstance(key, int):
            out.append(f"[{key}]")
        elif key.isidentifier():
            out.append(f".{key}" if out else key)
        else:
            out.append(f"[{json.dumps(key)}]")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Condition:
    """``path op value``: one test on the call's arguments (a missing path never matches)."""

    path: tuple[Segment, ...]
    op: Operator
    value: Any

    @property
    def text(self) -> str:
        """The condition in the compact string form."""
        return f"{render_path(self.path)} {self.op.value} {json.dumps(self.value)}"

    @property
    def has_wildcard(self) -> bool:
        """Whether the path contains ``[*]``."""
        return any(s.key is None for s in self.path)


@dataclass(frozen=True, slots=True)
class Rule:
    """``behavior tool(when...)``: one permission rule.

    ``tool`` is an exact tool id, a glob (``mcp_github_*``) or, for
    ``ToolKind.REGEX``, the body of a ``/regex/``. ``index`` is the rule's
    position in the configuration (used to break exact ties and to name it).
    """

    tool: str
    kind: ToolKind
    behavior: Behavior
    when: tuple[Condition, ...] = ()
    index: int = 0

    @property
    def pattern_text(self) -> str:
        """The rule without its behavior, in the compact string form."""
        tool = f"/{self.tool}/" if self.kind is ToolKind.REGEX else self.tool
        if not self.when:
            return tool
        return f"{tool}({', '.join(c.text for c in self.when)})"

    @property
    def text(self) -> str:
        """The rule in the compact string form, behavior first: ``deny shell(...)``."""
        return f"{self.behavior.value} {self.pattern_text}"

    @property
    def unconditional(self) -> bool:
        """Whether the rule applies to every call of its tools."""
        return not self.when

    def specificity(self) -> tuple[int, int, tuple[int, ...]]:
        """The sort key of "most specific": tool kind, condition count, operator precision."""
        precision = tuple(sorted((OPERATOR_PRECISION[c.op] for c in self.when), reverse=True))
        return (TOOL_KIND_RANK[self.kind], len(self.when), precision)
