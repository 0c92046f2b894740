"""``SkillsPlugin``: the ``skills`` plugin, its manifest and capability bound."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from awaken_runtime import (
    Band,
    CapabilityBound,
    Contributions,
    PhaseHookPoint,
    PluginManifest,
)

from ._config import SkillsConfig
from ._hook import SkillsHook
from ._registry import SkillRegistry
from ._state import ACTIVE_SKILLS
from ._tools import RESOURCE_TOOL, SCRIPT_TOOL, SKILL_TOOL, skill_tools
from ._version import __version__

__all__ = ["MANIFEST", "PLUGIN_ID", "SkillsPlugin"]

PLUGIN_ID = "skills"
"""The plugin id agents list in ``plugin_ids``."""

MANIFEST = PluginManifest(
    id=PLUGIN_ID,
    version=__version__,
    description="Progressively loaded skills: a catalog before inference, instructions on "
    "activation, resources and scripts on demand, allowed-tools narrowing.",
    config_model=SkillsConfig,
    bound=CapabilityBound(
        # The bound is static: skill_script is declared even though it is only
        # contributed when the agent's config sets enable_scripts.
        tool_ids=frozenset({SKILL_TOOL, RESOURCE_TOOL, SCRIPT_TOOL}),
        state_keys=frozenset({ACTIVE_SKILLS.decl}),
        phase_hooks=frozenset({PhaseHookPoint.BEFORE_INFERENCE}),
        context_bands=frozenset({Band.SYSTEM, Band.SESSION}),
        narrows_tools=True,
    ),
)
"""The manifest of :class:`SkillsPlugin` (id ``skills``)."""


class SkillsPlugin:
    """Skills from folders, installed skill packs and programmatic registration.

    ``paths`` (and :meth:`register`) add folders for every agent that enables
    the plugin; an agent's ``plugin_config["skills"]["paths"]`` adds its own.
    Registries are cached per distinct agent configuration, so agents with
    the same sources share one read of the skills; :meth:`refresh` re-reads.

    >>> plugin = SkillsPlugin(paths=["./skills"])
    >>> builder.with_plugin(plugin)  # doctest: +SKIP
    """

    manifest = MANIFEST

    def __init__(self, paths: Iterable[str | os.PathLike[str]] = ()) -> None:
        self._paths: list[str | os.PathLike[str]] = list(paths)
        self._registries: dict[tuple[tuple[str, ...], bool], SkillRegistry] = {}

    def register(self, path: str | os.PathLike[str]) -> None:
        """Add a folder (a skill, or a folder of skills) for every agent.

        Registries already read pick it up at once (a duplicate name raises here).
        """
        self._paths.append(path)
        for registry in self._registries.values():
            registry.add(path)

    def registry(self, config: SkillsConfig | None = None) -> SkillRegistry:
        """The (cached) registry for an agent configured with ``config``."""
        config = config or SkillsConfig()
        key = (tuple(config.paths), config.packs)
        found = self._registries.get(key)
        if found is None:
            found = SkillRegistry([*self._paths, *config.paths], packs=config.packs)
            self._registries[key] = found
        return found

    def refresh(self) -> None:
        """Re-read the skills of every registry this plugin made."""
        for registry in self._registries.values():
            registry.refresh()

    def resolve(self, config: Any) -> Contributions:
        """Tools and the BEFORE_INFERENCE hook for one agent.

        The skills are read here (once per distinct config), so an agent
        whose sources define one skill name twice fails to resolve with
        :class:`DuplicateSkillError`.
        """
        if not isinstance(config, SkillsConfig):
            config = SkillsConfig.model_validate(config or {})
        registry = self.registry(config)
        registry.generation  # noqa: B018 - read the skills now: errors surface at resolution
        tools = skill_tools(registry, config)
        hook = SkillsHook(registry, config, PLUGIN_ID, frozenset(t.descriptor.id for t in tools))
        return Contributions(
            tools=tools,
            state_keys=[ACTIVE_SKILLS],
            phase_hooks={PhaseHookPoint.BEFORE_INFERENCE: hook},
        )
