"""``PermissionsConfig``: the plugin's pydantic config model (rules, default, options).

Rules may be given three ways, all parsed into the same :class:`Rule` model
and validated when the agent resolves (a bad rule is an ``AgentConfigError``
naming the field, the rule text and the character position):

* ``rules``: objects ``{tool, when?, behavior}`` (``when`` items are objects
  ``{path, op, value}`` or compact strings ``'path ~ "src/**"'``; ``tool`` may
  itself carry conditions in the compact form), or strings that start with the
  behavior: ``'deny shell(command ~ "rm *")'``;
* ``allow``, ``deny``, ``ask``: lists of compact strings.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

from ._arguments import ArgumentViews
from ._audit import AuditScope
from ._model import Behavior, Condition, Rule
from ._parser import make_condition, parse_condition, parse_rule, parse_rule_line
from ._policy import Policy

__all__ = ["ConditionSpec", "PermissionsConfig", "RuleSpec"]


class ConditionSpec(BaseModel):
    """The object form of one condition: ``{path, op, value}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str
    op: str
    value: Any = None


class RuleSpec(BaseModel):
    """The object form of one rule: ``{tool, when?, behavior}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    tool: str = Field(min_length=1)
    when: list[ConditionSpec | str] = Field(default_factory=list)
    behavior: Behavior


def _condition(item: ConditionSpec | str) -> Condition:
    if isinstance(item, str):
        return parse_condition(item)
    return make_condition(item.path, item.op, item.value)


def _to_rule(item: RuleSpec | str, index: int = 0) -> Rule:
    if isinstance(item, str):
        return parse_rule_line(item, index)
    rule = parse_rule(item.tool, item.behavior, index)
    extra = tuple(_condition(c) for c in item.when)
    return Rule(rule.tool, rule.kind, rule.behavior, rule.when + extra, index)


def _check_item(item: RuleSpec | str) -> RuleSpec | str:
    _to_rule(item)
    return item


def _checker(behavior: Behavior) -> Any:
    def check(text: str) -> str:
        parse_rule(text, behavior)
        return text

    return AfterValidator(check)


class PermissionsConfig(BaseModel):
    """Configuration of the ``permissions`` plugin (``plugin_config.permissions``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rules: list[Annotated[RuleSpec | str, AfterValidator(_check_item)]] = Field(
        default_factory=list
    )
    """Rules in object form or as ``"<behavior> <rule>"`` strings."""
    allow: list[Annotated[str, _checker(Behavior.ALLOW)]] = Field(default_factory=list)
    """Compact rules whose behavior is ``allow``."""
    deny: list[Annotated[str, _checker(Behavior.DENY)]] = Field(default_factory=list)
    """Compact rules whose behavior is ``deny``."""
    ask: list[Annotated[str, _checker(Behavior.ASK)]] = Field(default_factory=list)
    """Compact rules whose behavior is ``ask``."""
    default: Behavior = Behavior.ASK
    """What happens when no rule matches."""
    on_deny: Literal["block", "stop"] = "block"
    """``block``: the model sees an error and the run continues; ``stop``: the run
    ends with ``Stopped`` after a rule denies a call."""
    inherit: bool = True
    """Apply this policy to sub-agents the agent delegates to."""
    hide_denied: bool = True
    """Hide tools denied unconditionally from the model's tool list."""
    audit: AuditScope = "run"
    """Where the audit trail goes: ``run``, ``thread`` or ``off``."""
    shell_arguments: dict[str, list[str]] = Field(default_factory=dict)
    """Tool id (or glob) -> the arguments that hold a shell command line: each simple
    command of it must be allowed (``{"shell": ["command"]}``)."""
    path_arguments: dict[str, list[str]] = Field(default_factory=dict)
    """Tool id (or glob) -> the arguments that hold a path (or a list of paths):
    matched after normalization (``{"write_file": ["path"]}``)."""
    text_arguments: dict[str, list[str]] = Field(default_factory=dict)
    """Tool id (or glob) -> the arguments that are plain text (a message, a URL, a
    query): an allow rule matches them as written. Any other undeclared string an
    allow rule's pattern matches must be plain (no shell operators such as ``;``,
    ``&&``, ``|``, ``$(``, ``>``, no line breaks, no ``.``/``..``/empty path
    segments), or the allow does not hold and the call falls through."""
    path_root: str | None = None
    """Resolve declared paths against this directory (symlinks followed) and match
    them root-relative; a path that leaves it is denied."""
    path_case_insensitive: bool = False
    """Declared paths are on a filesystem that ignores case (macOS, Windows): paths
    and the rule values on them are case-folded, ``=~`` regexes ignore case, and
    ``path_root`` is compared ignoring case."""
    unparsable_shell: Literal["ask", "deny"] = "ask"
    """What a shell command the parser cannot split becomes."""
    remember_across_agents: bool = False
    """Let a remembered decision apply to every agent of the thread or profile. By
    default it applies only to the agent (and policy fingerprint) that made it."""

    _policy: Policy | None = PrivateAttr(default=None)

    def fingerprint(self) -> str:
        """A short hash of this configuration (part of remembered decisions' owner)."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]

    def compiled_rules(self) -> list[Rule]:
        """Every rule in one list: ``rules``, then ``deny``, ``ask``, ``allow``."""
        out: list[Rule] = []
        for item in self.rules:
            out.append(_to_rule(item, len(out)))
        for behavior, texts in (
            (Behavior.DENY, self.deny),
            (Behavior.ASK, self.ask),
            (Behavior.ALLOW, self.allow),
        ):
            for text in texts:
                out.append(parse_rule(text, behavior, len(out)))
        return out

    def policy(self) -> Policy:
        """The compiled :class:`Policy` (built once per config object)."""
        if self._policy is None:
            views = ArgumentViews(
                self.shell_arguments,
                self.path_arguments,
                self.path_root,
                self.path_case_insensitive,
                self.text_arguments,
            )
            self._policy = Policy(
                self.compiled_rules(), self.default, views, Behavior(self.unparsable_shell)
            )
        return self._policy
