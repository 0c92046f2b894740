"""Evaluation: which rule decides a call, and why (``Policy.explain``).

Precedence, applied in this order:

1. Any matching ``deny`` wins (configured rules first, then remembered denies).
2. A remembered decision for exactly this call (tool + arguments), from the
   thread, then the profile: it is more specific than any pattern.
3. Otherwise the most specific matching rule wins: exact tool id > glob >
   regex, then more conditions, then more precise operators
   (``=`` > ``in`` > ``~`` > ``=~``, ``<``, ``>`` > negations); on a tie
   ``ask`` beats ``allow``, then the earlier rule wins.
4. No match: the configured ``default`` (``ask`` unless set).

An allow rule vouches only for plain strings (:mod:`._vouch`: no shell
operators, normal paths) unless the argument is declared, and numeric
conditions fail closed (:mod:`._numbers`). Deny rules also see an undeclared
path-looking argument in its normalized form (``src/./secrets/key`` is also
``src/secrets/key``).

Arguments declared as shell commands or paths (:mod:`._arguments`) are
matched as their views: a deny matching the raw call or any view denies; a
path outside the root denies; otherwise every view (each simple command of a
compound one, the normalized path) is decided as above and the strictest
verdict wins (``deny`` > ``ask`` > ``allow``), so an allow must hold for all.

Candidate rules are indexed per tool id (exact ids by dict lookup; glob and
regex tool patterns filed by literal prefix in :class:`~._tools.ToolPatterns`,
looked up once per distinct tool id and cached), and within a tool by
:class:`~._index.OrderedRules`, so a check tests only the rules that can apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._arguments import ArgumentViews, Views, casefold_rule
from ._index import OrderedRules
from ._matchers import ArgsMatcher, compile_conditions, compile_tool
from ._model import Behavior, Condition, Operator, Rule, Segment, ToolKind
from ._remember import call_key
from ._tools import ToolPatterns
from ._vouch import normalized_paths

__all__ = ["Policy", "Verdict", "VerdictSource"]

VerdictSource = Literal["rule", "thread", "profile", "default", "argument"]
"""What decided: a configured rule, a remembered thread/profile decision, the default,
or an argument that cannot be matched (unparsable command, path outside the root)."""

_STRICTNESS = {Behavior.ALLOW: 0, Behavior.ASK: 1, Behavior.DENY: 2}

_CACHE_LIMIT = 4096
_Compiled = tuple[Rule, ArgsMatcher]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of evaluating one call: a behavior and what decided it."""

    behavior: Behavior
    rule: Rule | None
    source: VerdictSource
    detail: str = ""
    """Which part of a compound command or which normalized path decided, if any."""
    level: int | None = None
    """With an inherited chain (``explain(..., inherited=...)``): the policy that
    decided, ``0`` for the root ancestor up to ``levels - 1`` for the agent itself."""
    levels: int = 1
    """How many policies the chain had (ancestors that pass theirs down, plus the agent)."""

    @property
    def rule_text(self) -> str:
        """The deciding rule in compact form, or ``default: ask`` style text."""
        if self.rule is None:
            return f"default: {self.behavior.value}"
        return self.rule.text

    def describe(self) -> str:
        """A one-line explanation for people and for the model."""
        text = self._describe()
        if self.detail and self.source != "argument":
            text = f"{text} (on {self.detail})"
        if self.level is not None:
            up = self.levels - 1 - self.level
            where = "its own policy" if up == 0 else f"the policy inherited from {up} level"
            where += "s up" if up > 1 else " up" if up else ""
            text = f"{text}, at level {self.level} of {self.levels} ({where})"
        return text

    def _describe(self) -> str:
        if self.source == "argument":
            return f"an argument that cannot be checked: {self.detail}"
        if self.source == "default":
            return f"no rule matched; the default is {self.behavior.value}"
        if self.source == "rule":
            assert self.rule is not None
            return f"rule '{self.rule.text}'"
        return f"a decision remembered for this {self.source}: '{self.rule_text}'"


def _remembered_rule(entry: Mapping[str, Any]) -> Rule:
    args = entry.get("arguments") or {}
    when = tuple(Condition((Segment(k),), Operator.EQ, v) for k, v in sorted(args.items()))
    return Rule(
        tool=str(entry.get("tool", "")),
        kind=ToolKind.EXACT,
        behavior=Behavior(entry["behavior"]),
        when=when,
        index=-1,
    )


class Policy:
    """Compiled rules plus a default; evaluate calls with :meth:`evaluate`."""

    def __init__(
        self,
        rules: Sequence[Rule],
        default: Behavior = Behavior.ASK,
        arguments: ArgumentViews | None = None,
        unparsable: Behavior = Behavior.ASK,
    ) -> None:
        self.rules = tuple(rules)
        self.default = Behavior(default)
        self.arguments = arguments if arguments else None
        self.unparsable = Behavior(unparsable)
        compiled = [(r, compile_conditions(r), compile_tool(r)) for r in self.rules]
        self._exact: dict[str, list[_Compiled]] = {}
        patterns: list[tuple[Rule, Any, _Compiled]] = []
        for rule, body, names in compiled:
            if rule.kind is ToolKind.EXACT:
                self._exact.setdefault(rule.tool, []).append((rule, body))
            else:
                patterns.append((rule, names, (rule, body)))
        self._patterns = ToolPatterns(patterns)
        self._cache: dict[str, tuple[OrderedRules, OrderedRules]] = {}
        # Per tool: the verdict when no argument can change it (see ``_fixed``), else None.
        self._fixed_of: dict[str, Verdict | None] = {}
        # Tools the rules name exactly get their indexes now, so their first check is warm.
        self._known = {tool: self._build(tool) for tool in self._exact}

    def candidates(self, tool: str) -> tuple[OrderedRules, OrderedRules]:
        """``(denies, others)`` naming ``tool``, each in decision order (cached per tool)."""
        found = self._known.get(tool) or self._cache.get(tool)
        if found is not None:
            return found
        found = self._build(tool)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[tool] = found
        return found

    def _build(self, tool: str) -> tuple[OrderedRules, OrderedRules]:
        named = list(self._exact.get(tool, ()))
        named.extend(self._patterns.naming(tool))
        denies = [c for c in named if c[0].behavior is Behavior.DENY]
        others = [c for c in named if c[0].behavior is not Behavior.DENY]
        denies.sort(key=lambda c: (c[0].specificity(), -c[0].index), reverse=True)
        others.sort(
            key=lambda c: (c[0].specificity(), c[0].behavior is Behavior.ASK, -c[0].index),
            reverse=True,
        )
        return self._ordered(tool, denies), self._ordered(tool, others)

    def _ordered(self, tool: str, rules: list[_Compiled]) -> OrderedRules:
        arguments = self.arguments
        names = arguments.declared(tool)[1] if arguments and arguments.case_insensitive else ()
        if not names:
            return OrderedRules(rules)
        # Paths ignore case: match folded rules against folded paths, name the rule as written.
        folded = [(casefold_rule(rule, names), body) for rule, body in rules]
        matched = [
            (f, body if f is r else compile_conditions(f))
            for (f, _), (r, body) in zip(folded, rules, strict=True)
        ]
        return OrderedRules(matched, [rule for rule, _ in rules])

    def evaluate(
        self,
        tool: str,
        args: Mapping[str, Any],
        thread: Mapping[str, Any] | None = None,
        profile: Mapping[str, Any] | None = None,
        owner: str = "",
    ) -> Verdict:
        """Decide a call given the remembered decisions of its thread and profile.

        ``owner`` names whose remembered decisions count (see :func:`call_key`).
        """
        fixed_of = self._fixed_of
        fixed = fixed_of[tool] if tool in fixed_of else self._fixed(tool)
        if fixed is not None and (fixed.behavior is Behavior.DENY or not (thread or profile)):
            return fixed
        if self.arguments is not None:
            views = self.arguments.of(tool, args)
            if views is not None:
                return self._evaluate_views(tool, args, views, thread, profile, owner)
        denies, others = self.candidates(tool)
        if denies:
            denied = denies.first(args)
            if denied is None and (alt := normalized_paths(args)) is not None:
                denied = denies.first(alt[0])
                if denied is not None:
                    return Verdict(Behavior.DENY, denied, "rule", alt[1])
            if denied is not None:
                return Verdict(Behavior.DENY, denied, "rule")
        remembered = self._remembered(tool, args, thread, profile, owner)
        if remembered is not None:
            return remembered
        found = others.first(args) if others else None
        if found is not None:
            return Verdict(found.behavior, found, "rule")
        return Verdict(self.default, None, "default")

    def _fixed(self, tool: str) -> Verdict | None:
        """The verdict of every ``tool`` call the remembered tables do not decide, when
        the arguments cannot change it: no rule naming ``tool`` has conditions and
        ``tool`` declares no shell or path argument (whose views could be malformed).
        An unconditional deny wins over remembered decisions too, as in :meth:`evaluate`.
        """
        denies, others = self.candidates(tool)
        plain = not any(rule.when for rule, _ in (*denies.rules, *others.rules))
        if plain and self.arguments is not None:
            shell, paths = self.arguments.declared(tool)
            plain = not shell and not paths
        fixed = self._rules_only(tool) if plain else None
        if len(self._fixed_of) >= _CACHE_LIMIT:
            self._fixed_of.clear()
        self._fixed_of[tool] = fixed
        return fixed

    def _declared(self, tool: str) -> frozenset[str]:
        arguments = self.arguments
        if arguments is None:
            return frozenset()
        shell, paths = arguments.declared(tool)
        return frozenset((*shell, *paths, *arguments.texts(tool)))

    def _rules_only(self, tool: str) -> Verdict:
        """What the rules alone say of a ``tool`` call matched by no condition."""
        denies, others = self.candidates(tool)
        denied = denies.first({}) if denies else None
        if denied is not None:
            return Verdict(Behavior.DENY, denied, "rule")
        found = others.first({}) if others else None
        if found is not None:
            return Verdict(found.behavior, found, "rule")
        return Verdict(self.default, None, "default")

    def _remembered(
        self,
        tool: str,
        args: Mapping[str, Any],
        thread: Mapping[str, Any] | None,
        profile: Mapping[str, Any] | None,
        owner: str,
    ) -> Verdict | None:
        if thread or profile:
            key = call_key(tool, args, owner)
            hits: list[tuple[VerdictSource, Mapping[str, Any]]] = []
            if thread and key in thread:
                hits.append(("thread", thread[key]))
            if profile and key in profile:
                hits.append(("profile", profile[key]))
            hits.sort(key=lambda h: h[1].get("behavior") != Behavior.DENY.value)
            if hits:
                source, entry = hits[0]
                rule = _remembered_rule(entry)
                return Verdict(rule.behavior, rule, source)
        return None

    def _evaluate_views(
        self,
        tool: str,
        args: Mapping[str, Any],
        views: Views,
        thread: Mapping[str, Any] | None,
        profile: Mapping[str, Any] | None,
        owner: str,
    ) -> Verdict:
        denies, others = self.candidates(tool)
        if denies:
            alt = normalized_paths(args, self._declared(tool))
            extra = (alt,) if alt is not None else ()
            for view, detail in ((args, ""), *extra, *views.items):
                denied = denies.first(view)
                if denied is not None:
                    return Verdict(Behavior.DENY, denied, "rule", detail)
        if views.escaped:
            return Verdict(Behavior.DENY, None, "argument", views.problem)
        remembered = self._remembered(tool, args, thread, profile, owner)
        if remembered is not None:
            return remembered
        if views.problem:
            return Verdict(self.unparsable, None, "argument", views.problem)
        strictness, deciding, shown = -1, None, ""
        for view, detail in views.items:
            found = others.first(view) if others else None
            rank = _STRICTNESS[found.behavior if found is not None else self.default]
            if rank > strictness:
                strictness, deciding, shown = rank, found, detail
                if rank == _STRICTNESS[Behavior.DENY]:
                    break  # nothing is stricter
        if deciding is None:
            return Verdict(self.default, None, "default", shown)
        return Verdict(deciding.behavior, deciding, "rule", shown)

    def explain(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        thread: Mapping[str, Any] | None = None,
        profile: Mapping[str, Any] | None = None,
        owner: str = "",
    ) -> Verdict:
        """The verdict for ``tool(args)`` with its deciding rule (same as :meth:`evaluate`).

        ``Verdict.detail`` names the part of a compound command or the
        normalized path that decided.
        """
        return self.evaluate(tool, args or {}, thread, profile, owner)

    def denied_unconditionally(self, tool: str) -> bool:
        """Whether a deny rule without conditions names ``tool``."""
        return self.candidates(tool)[0].unconditional()

    def hides_any(self) -> bool:
        """Whether :meth:`hidden` can name a tool at all (some deny rule has no conditions)."""
        return any(r.behavior is Behavior.DENY and not r.when for r in self.rules)

    def hidden(self, tool_ids: Iterable[str]) -> frozenset[str]:
        """The tool ids the model should not see: those denied unconditionally."""
        return frozenset(t for t in tool_ids if self.denied_unconditionally(t))
