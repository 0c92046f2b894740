"""Remembered decisions: exact-match allow/deny entries in THREAD or PROFILE state.

A human answering an ask with ``remember="thread"`` or ``"profile"`` stores an
entry keyed by :func:`call_key` (tool id + canonical JSON of the arguments)
under :data:`REMEMBERED_KEY` in that scope, so the very same call is not asked
again there. The key is COMMUTATIVE: entries from several calls of one step
merge instead of conflicting.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from awaken_runtime import Command, MergePolicy, Scope, Store

__all__ = ["REMEMBERED_KEY", "call_key", "remember_command", "remembered"]

REMEMBERED_KEY = "permissions.remembered"
"""THREAD- and PROFILE-scope COMMUTATIVE key: ``{call key: entry}``."""

_EMPTY: Mapping[str, Any] = {}


def call_key(tool: str, args: Mapping[str, Any], owner: str = "") -> str:
    """A stable key for one exact call: ``tool:`` + SHA-256 of the canonical arguments.

    ``owner`` (an agent id and its policy fingerprint, or ``""`` when decisions
    are shared across agents) is part of the hash, so a decision one agent
    remembered does not decide for a differently configured one.
    """
    canonical = json.dumps([owner, args], sort_keys=True, separators=(",", ":"), default=str)
    return f"{tool}:{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"


def remembered(store: Store, scope: Scope) -> Mapping[str, Any]:
    """The remembered entries of ``scope`` (empty mapping when none)."""
    value = store.get_value(REMEMBERED_KEY, scope)
    return value if isinstance(value, dict) else _EMPTY


def remember_command(
    scope: Literal["thread", "profile"],
    tool: str,
    args: Mapping[str, Any],
    behavior: Literal["allow", "deny"],
    *,
    by: str,
    at: str,
    owner: str = "",
) -> Command:
    """The write that remembers ``behavior`` for exactly ``tool(args)`` in ``scope``."""
    entry = {
        "tool": tool,
        "arguments": dict(args),
        "behavior": behavior,
        "by": by,
        "at": at,
        "owner": owner,
    }
    return Command.set(
        REMEMBERED_KEY,
        {call_key(tool, args, owner): entry},
        scope=Scope(scope),
        merge=MergePolicy.COMMUTATIVE,
    )
