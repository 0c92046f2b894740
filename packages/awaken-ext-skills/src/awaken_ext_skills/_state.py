"""Thread state of the skills extension: which skills are active, with what."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from awaken_runtime import MergePolicy, Scope, StateKey

__all__ = ["ACTIVE_SKILLS", "ActiveSkill"]


class ActiveSkill(BaseModel):
    """One activation: the SKILL.md fingerprint it was made against and its arguments."""

    model_config = ConfigDict(frozen=True)
    fingerprint: str
    arguments: dict[str, str] = Field(default_factory=dict)


ACTIVE_SKILLS: StateKey[dict[str, ActiveSkill]] = StateKey(
    "skills.active",
    dict[str, ActiveSkill],
    default={},
    scope=Scope.THREAD,
    merge=MergePolicy.DISJOINT,
)
"""THREAD-scope ``{skill name: ActiveSkill}``; persists across runs of a thread.

Written by the ``skill`` tool (activate, deactivate) and by the
BEFORE_INFERENCE hook (dropping skills whose SKILL.md changed or vanished).
"""
