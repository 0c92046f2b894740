"""``explain``: the verdict on one call and what decided it, alone or through inheritance.

A sub-agent's calls pass through its own policy *and* every ancestor policy
inherited down to it (``inherit = true``, the default); each decides on its
own and the strictest decision wins (``deny`` > ``ask`` > ``allow``), the
agent's own policy first on a tie, then its parent's, as the runtime orders
the gates. ``explain(config, tool, args, inherited=[root, ..., parent])``
gives that combined verdict and says which level decided (``Verdict.level``),
next to which rule, which part of a compound command and which normalized
path (``Verdict.detail``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ._config import PermissionsConfig
from ._model import Behavior
from ._policy import Verdict

__all__ = ["explain"]

_STRICTNESS = {Behavior.ALLOW: 0, Behavior.ASK: 1, Behavior.DENY: 2}


def _config(value: PermissionsConfig | dict[str, Any]) -> PermissionsConfig:
    if isinstance(value, PermissionsConfig):
        return value
    return PermissionsConfig.model_validate(value)


def explain(
    config: PermissionsConfig | dict[str, Any],
    tool: str,
    args: dict[str, Any] | None = None,
    *,
    inherited: Sequence[PermissionsConfig | dict[str, Any]] = (),
) -> Verdict:
    """The verdict and deciding rule for ``tool(args)`` under ``config``.

    ``inherited`` lists the ancestors' permissions configs, root first, down to
    the parent; an ancestor with ``inherit = false`` does not reach the agent
    (its level is skipped). The verdict then carries ``level`` and ``levels``.

    >>> explain({"deny": ["shell(command ~ 'rm *')"]}, "shell", {"command": "rm -rf /"}).rule_text
    'deny shell(command ~ "rm *")'
    """
    own = _config(config)
    if not inherited:
        return own.policy().explain(tool, args)
    chain = [_config(c) for c in inherited]
    levels = len(chain) + 1
    best: Verdict | None = None
    # The agent's own policy first, then its parent's, up to the root: a tie keeps the nearest.
    for level in range(levels - 1, -1, -1):
        policy_config = own if level == levels - 1 else chain[level]
        if level < levels - 1 and not policy_config.inherit:
            continue
        verdict = policy_config.policy().explain(tool, args)
        if best is None or _STRICTNESS[verdict.behavior] > _STRICTNESS[best.behavior]:
            best = dataclasses.replace(verdict, level=level, levels=levels)
    assert best is not None  # the agent's own level always decides something
    return best
