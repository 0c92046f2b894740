"""The BEFORE_INFERENCE hook: catalog, active instructions, tool narrowing.

Per step it costs O(active skills), not O(installed skills): the catalog
message is rendered once per registry generation and reused, and an active
skill costs one ``stat`` of its SKILL.md (to notice changes on disk) plus a
cached rendering of its instructions.
"""

from __future__ import annotations

from collections.abc import Sequence

from awaken_runtime import (
    Band,
    Command,
    ContextMessage,
    HookReaction,
    PhaseContext,
    Scope,
    ToolFilter,
    inject,
)

from ._catalog import render_catalog
from ._config import SkillsConfig
from ._registry import SkillRegistry
from ._skill import Skill
from ._state import ACTIVE_SKILLS, ActiveSkill

__all__ = ["ACTIVE_KEY_PREFIX", "CATALOG_KEY", "NOTICE_KEY", "SkillsHook"]

CATALOG_KEY = "skills.catalog"
"""Context key of the catalog (system band)."""
ACTIVE_KEY_PREFIX = "skills.active."
"""Context key prefix of an active skill's instructions (session band): prefix + name."""
NOTICE_KEY = "skills.notice"
"""Context key of the one-step notice that skills were deactivated (session band)."""
_CACHE_LIMIT = 256


class SkillsHook:
    """Callable BEFORE_INFERENCE hook for one agent (see the module docstring)."""

    def __init__(
        self,
        registry: SkillRegistry,
        config: SkillsConfig,
        plugin_id: str,
        skill_tool_ids: frozenset[str],
    ) -> None:
        self.registry = registry
        self.config = config
        self.plugin_id = plugin_id
        self.skill_tool_ids = skill_tool_ids
        self._generation = -1
        self._catalog: ContextMessage | None = None
        self._instructions: dict[tuple[str, str, tuple[tuple[str, str], ...]], ContextMessage] = {}
        # Single-slot caches: the same inputs as last step give the same (immutable) output.
        self._last_raw: object = None
        self._last_active: dict[str, ActiveSkill] = {}
        # entry key -> (the entry, its standing command), and the standing table's key.
        self._stand: dict[str, tuple[ContextMessage, Command]] = {}
        self._table_key: str | None = None
        self._last_only: frozenset[str] = frozenset()
        self._last_filter: Command | None = None
        self._tools_seen: object = None
        self._known: dict[tuple[str, str], tuple[str, ...]] = {}

    def catalog(self) -> ContextMessage | None:
        """The catalog entry for the current registry generation (rendered once per change)."""
        generation = self.registry.generation
        if generation != self._generation:
            text = render_catalog(
                self.registry.ordered,
                max_entries=self.config.catalog_max_entries,
                max_bytes=self.config.catalog_max_bytes,
            )
            self._catalog = (
                None
                if text is None
                else ContextMessage(key=CATALOG_KEY, band=Band.SYSTEM, content=text)
            )
            self._generation = generation
        return self._catalog

    def instructions(self, skill: Skill, active: ActiveSkill) -> ContextMessage:
        """The context entry carrying ``skill``'s instructions rendered with its arguments."""
        cache_key = (skill.name, skill.fingerprint, tuple(sorted(active.arguments.items())))
        found = self._instructions.get(cache_key)
        if found is None:
            if len(self._instructions) >= _CACHE_LIMIT:
                self._instructions.clear()
            body = skill.render(active.arguments)
            found = ContextMessage(
                key=ACTIVE_KEY_PREFIX + skill.name,
                band=Band.SESSION,
                content=f'<skill_instructions name="{skill.name}">\n{body}\n</skill_instructions>',
            )
            self._instructions[cache_key] = found
        return found

    async def __call__(self, ctx: PhaseContext) -> HookReaction | None:
        """Keep the catalog and active instructions standing; narrow tools; drop stale
        activations. A step in which none of it changed stages nothing."""
        raw = ctx.store.get_value(ACTIVE_SKILLS.key, ACTIVE_SKILLS.scope)
        if not raw:
            catalog = self.catalog()
            commands = self._standing(ctx, (catalog,) if catalog is not None else ())
            return HookReaction(commands=commands) if commands else None
        if raw is not self._last_raw:  # committed values are replaced, never mutated
            self._last_active = ACTIVE_SKILLS.get(ctx.store)
            self._last_raw = raw
        active = self._last_active
        entries: list[ContextMessage] = []
        kept: dict[str, ActiveSkill] = {}
        dropped: list[str] = []
        allowed: set[str] = set()
        narrowing = False
        for name, activation in active.items():
            skill = self.registry.check(name)  # may re-read or drop it: before the catalog
            if skill is None or skill.fingerprint != activation.fingerprint:
                dropped.append(name)
                continue
            kept[name] = activation
            entries.append(self.instructions(skill, activation))
            if skill.allowed_tools:
                known = self._known_tools(skill, ctx)
                if known:
                    narrowing = True
                    allowed.update(known)
        catalog = self.catalog()
        if catalog is not None:
            entries.append(catalog)
        commands = self._standing(ctx, entries)
        if dropped:
            commands.append(ACTIVE_SKILLS.set(kept))
            names = ", ".join(repr(n) for n in sorted(dropped))
            notice = ContextMessage(
                key=NOTICE_KEY,
                band=Band.SESSION,
                content=f"Skill(s) {names} changed on disk or were removed and are no "
                f"longer active. Activate again with the `skill` tool if still needed.",
            )
            commands.append(inject(notice))  # for one request only
        if narrowing and self.config.narrow_tools:
            # Tool filters last one request (there is no standing filter): staged every step.
            commands.append(self._filter(frozenset(allowed | self.skill_tool_ids)))
        return HookReaction(commands=commands) if commands else None

    def _known_tools(self, skill: Skill, ctx: PhaseContext) -> tuple[str, ...]:
        """The ``allowed-tools`` of ``skill`` that this agent has.

        Ids the agent does not have are reported once (a notice on the
        registry, plus a :class:`SkillWarning`); a skill none of whose ids
        exist does not narrow at all, so a typo cannot hide every real tool.
        """
        if ctx.request is None:
            return skill.allowed_tools
        tools = ctx.request.tools
        if tools is not self._tools_seen:  # the agent's descriptors: one object per run
            self._tools_seen = tools
            self._known.clear()
        key = (skill.name, skill.fingerprint)
        found = self._known.get(key)
        if found is None:
            have = {t.id for t in tools}
            found = tuple(t for t in skill.allowed_tools if t in have)
            unknown = [t for t in skill.allowed_tools if t not in have]
            if unknown:
                effect = (
                    "they are ignored"
                    if found
                    else "none of its allowed-tools exist, so it does not narrow the tools"
                )
                self.registry.notice(
                    skill,
                    f"allowed-tools {', '.join(repr(t) for t in unknown)} are not tools of "
                    f"agent {ctx.run.agent_id!r}; {effect} (check the ids against the "
                    f"agent's tools)",
                )
            self._known[key] = found
        return found

    def _standing(self, ctx: PhaseContext, entries: Sequence[ContextMessage]) -> list[Command]:
        """What makes the run's standing context hold exactly ``entries`` of this plugin.

        Each entry's command is built once per entry object; the committed table
        keeps the very value it wrote, so an entry already standing is seen by
        identity and costs nothing. Entries of this plugin no longer wanted
        (a deactivated skill) are withdrawn.
        """
        if self._table_key is None:  # the runtime's standing-context key, read off a command
            self._table_key = inject(standing=True).key
        table = ctx.store.get_value(self._table_key, Scope.RUN) or {}
        cached = self._stand
        commands: list[Command] = []
        for entry in entries:
            key = entry.key
            hit = cached.get(key)
            if hit is None or hit[0] is not entry:
                hit = cached[key] = (entry, inject(entry, standing=True))
            if table.get(key) is not hit[1].action.value[key]:  # type: ignore[union-attr]
                commands.append(hit[1])
        if len(table) > len(entries) or commands:
            wanted = {entry.key for entry in entries}
            gone = [k for k, v in table.items() if v is not None and k not in wanted and _ours(k)]
            if gone:
                commands.append(inject(standing=True, withdraw=gone))
        return commands

    def _filter(self, only: frozenset[str]) -> Command:
        if self._last_filter is None or only != self._last_only:
            self._last_only = only
            self._last_filter = ToolFilter(only=only).command(self.plugin_id)
        return self._last_filter


def _ours(key: str) -> bool:
    """Whether a standing entry key is one this plugin writes (catalog or instructions)."""
    return key == CATALOG_KEY or key.startswith(ACTIVE_KEY_PREFIX)
