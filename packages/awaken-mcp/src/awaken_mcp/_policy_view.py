"""What the permissions plugin of a serving agent says about a tool, read without a run.

Used for two things the gate chain itself cannot tell the MCP client: a tool
its agent's policy denies outright is hidden from that agent's model, so the
server leaves it out of ``tools/list`` too; and a direct call of it, which the
run refuses as "not available", is answered naming the rule that denies it.
Only the ``permissions`` plugin is read here (imported when an agent enables
it, so the package is installed); other plugins' gates still decide every call.
"""

from __future__ import annotations

from typing import Any

from awaken_runtime import Runtime

__all__ = ["denied_by", "hidden_by_policy"]

_PLUGIN = "permissions"


def _config(runtime: Runtime, agent_id: str) -> Any | None:
    config = runtime.resolve(agent_id).config
    if _PLUGIN not in config.plugin_ids:
        return None
    from awaken_ext_permissions import PermissionsConfig

    return PermissionsConfig.model_validate(config.plugin_config.get(_PLUGIN, {}))


def hidden_by_policy(runtime: Runtime, agent_id: str, tool_id: str) -> bool:
    """Whether the agent's policy hides ``tool_id`` (denied with no conditions)."""
    config = _config(runtime, agent_id)
    return bool(config is not None and config.hide_denied and config.policy().hidden([tool_id]))


def denied_by(runtime: Runtime, agent_id: str, tool_id: str, args: dict[str, Any]) -> str | None:
    """The rule of the agent's policy that denies ``tool_id(args)``, if one does."""
    config = _config(runtime, agent_id)
    if config is None:
        return None
    from awaken_ext_permissions import Behavior

    verdict = config.policy().explain(tool_id, args)
    return verdict.describe() if verdict.behavior is Behavior.DENY else None
