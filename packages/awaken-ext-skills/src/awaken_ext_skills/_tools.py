"""The model-facing tools: ``skill``, ``load_skill_resource`` and ``skill_script``.

Results are JSON. Refusals are error results (``is_error``) of the form
``{"error": code, "message": text}`` with stable codes: ``unknown_skill``,
``skill_not_active``, ``invalid_arguments``, ``invalid_path``,
``path_escapes_root``, ``not_allowed``, ``not_found``, ``not_a_file``,
``not_utf8``, ``unreadable``, ``too_large``, ``unsupported_script``, ``script_failed_to_start``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from awaken_runtime import Tool, ToolCallContext, ToolOutput, tool

from ._config import SkillsConfig
from ._paths import PathRefused
from ._registry import SkillRegistry
from ._resources import RESOURCE_AREAS, list_resources, read_resource
from ._scripts import ScriptLimits, run_script
from ._skill import Skill
from ._state import ACTIVE_SKILLS, ActiveSkill

__all__ = ["RESOURCE_TOOL", "SCRIPT_TOOL", "SKILL_TOOL", "skill_tools"]

SKILL_TOOL = "skill"
"""Activates or deactivates a skill."""
RESOURCE_TOOL = "load_skill_resource"
"""Loads a file from an active skill's references/ or assets/."""
SCRIPT_TOOL = "skill_script"
"""Runs a script from an active skill's scripts/ (only when scripts are enabled)."""

ArgValue = str | int | float | bool


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


def _refusal(code: str, message: str) -> ToolOutput:
    return ToolOutput.error(_json({"error": code, "message": message}))


def _unknown(registry: SkillRegistry, name: str) -> ToolOutput:
    names = [s.name for s in registry.ordered[:20]]
    more = ", ..." if len(registry) > 20 else ""
    return _refusal(
        "unknown_skill",
        f"there is no skill {name!r}; available: {', '.join(names) or 'none'}{more}",
    )


def _active_skill(registry: SkillRegistry, ctx: ToolCallContext, name: str) -> Skill | ToolOutput:
    skill = registry.check(name)
    if skill is None:
        return _unknown(registry, name)
    active = ACTIVE_SKILLS.get(ctx.store).get(name)
    if active is None or active.fingerprint != skill.fingerprint:
        return _refusal("skill_not_active", f"activate {name!r} with the `{SKILL_TOOL}` tool first")
    return skill


def skill_tools(registry: SkillRegistry, config: SkillsConfig) -> list[Tool]:
    """The tools one agent gets (``skill_script`` only with ``enable_scripts``)."""
    scripts_on = config.enable_scripts

    @tool(name=SKILL_TOOL)
    def skill(
        ctx: ToolCallContext,
        name: str,
        arguments: dict[str, ArgValue] | None = None,
        deactivate: bool = False,
    ) -> ToolOutput:
        """Activate a skill from the skill catalog, loading its instructions.

        Once active, the skill's instructions stay in your context on every
        later turn of this conversation until you deactivate it. Activate a
        skill before doing the task it covers.

        Args:
            name: The skill's name exactly as listed in the catalog.
            arguments: Values for the arguments the skill declares, by name.
            deactivate: True to unload an active skill instead.
        """
        found = registry.check(name)
        if found is None:
            return _unknown(registry, name)
        active = dict(ACTIVE_SKILLS.get(ctx.store))
        if deactivate:
            if active.pop(name, None) is None:
                return ToolOutput.ok(_json({"skill": name, "active": False, "changed": False}))
            return ToolOutput.ok(
                _json({"skill": name, "active": False, "changed": True}),
                state=[ACTIVE_SKILLS.set(active)],
            )
        try:
            bound = found.bind_arguments(arguments)
        except ValueError as exc:
            declared = [
                {"name": a.name, "description": a.description, "required": a.required}
                for a in found.arguments
            ]
            return ToolOutput.error(
                _json({"error": "invalid_arguments", "message": str(exc), "declared": declared})
            )
        active[name] = ActiveSkill(fingerprint=found.fingerprint, arguments=bound)
        areas = (*RESOURCE_AREAS, "scripts") if scripts_on else RESOURCE_AREAS
        result: dict[str, Any] = {
            "skill": name,
            "active": True,
            "arguments": bound,
            "files": list_resources(found, areas),
            "note": "The skill's instructions are now in your context; follow them. Load "
            f"files with `{RESOURCE_TOOL}`"
            + (f" and run scripts with `{SCRIPT_TOOL}`." if scripts_on else "."),
        }
        if found.allowed_tools:
            result["allowed_tools"] = list(found.allowed_tools)
        return ToolOutput.ok(_json(result), state=[ACTIVE_SKILLS.set(active)])

    @tool(name=RESOURCE_TOOL)
    async def load_skill_resource(ctx: ToolCallContext, skill: str, path: str) -> ToolOutput:
        """Load a file of an active skill: references/ as text, assets/ as base64.

        Args:
            skill: The active skill's name.
            path: The file's path relative to the skill folder, e.g. "references/guide.md".
        """
        found = _active_skill(registry, ctx, skill)
        if isinstance(found, ToolOutput):
            return found
        try:
            data = await asyncio.to_thread(
                read_resource,
                found,
                path,
                max_text_bytes=config.max_reference_bytes,
                max_asset_bytes=config.max_asset_bytes,
            )
        except PathRefused as exc:
            return _refusal(exc.code, exc.message)
        return ToolOutput.ok(_json(data))

    tools: list[Tool] = [skill, load_skill_resource]
    if not scripts_on:
        return tools
    limits = ScriptLimits(
        timeout=config.script_timeout_seconds,
        max_output_bytes=config.max_script_output_bytes,
        max_args=config.max_script_args,
        max_arg_bytes=config.max_script_arg_bytes,
    )

    @tool(name=SCRIPT_TOOL)
    async def skill_script(
        ctx: ToolCallContext, skill: str, script: str, args: list[str] | None = None
    ) -> ToolOutput:
        """Run a script of an active skill (no shell; cwd is the skill folder).

        Args:
            skill: The active skill's name.
            script: The script's path, e.g. "scripts/fill_form.py" (.py or .sh).
            args: Command-line arguments, one list item per argument.
        """
        found = _active_skill(registry, ctx, skill)
        if isinstance(found, ToolOutput):
            return found
        try:
            result = await run_script(found, script, args or [], limits=limits, cancel=ctx.cancel)
        except PathRefused as exc:
            return _refusal(exc.code, exc.message)
        except OSError as exc:
            return _refusal("script_failed_to_start", f"{script!r}: {exc}")
        data = result.as_dict()
        return ToolOutput(content=_json(data), is_error=not result.ok)

    tools.append(skill_script)
    return tools
