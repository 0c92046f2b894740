"""The commit-time capability check: may this plugin stage this command?

Ordinary keys must be declared in the plugin's bound. The runtime's own
request-only keys have rules of their own: context entries only in the
plugin's declared bands and only under keys it created (the first plugin to
write a context key owns it for the leg; the runtime alone clears the table),
a tool filter only under its own plugin id, inference
parameters only those the bound names, a request window only with
``narrows_window``.
"""

from __future__ import annotations

from .._errors import CapabilityBoundError
from ..plugins._context import (
    CONTEXT_MESSAGES,
    INFERENCE_PARAMS,
    REQUEST_WINDOW,
    STANDING_CONTEXT,
    TOOL_FILTER,
)
from ..plugins._plugin import CapabilityBound
from ..state._engine import Command, Remove, Scope

__all__ = ["check_bound"]

_RUN = Scope.RUN
_CONTEXT_KEYS = frozenset({CONTEXT_MESSAGES, STANDING_CONTEXT})


def check_bound(
    bound: CapabilityBound, plugin_id: str, command: Command, owners: dict[str, str]
) -> None:
    """Raise ``CapabilityBoundError`` if ``command`` is outside ``plugin_id``'s bound.

    ``owners`` maps each context key written this leg to the plugin that
    created it; a first write claims the key.
    """
    key = command.key
    if command.scope is _RUN:
        if key in _CONTEXT_KEYS:
            _check_context(bound, plugin_id, command, owners)
            return
        if key == TOOL_FILTER:
            value = getattr(command.action, "value", None) or {}
            if not bound.narrows_tools or set(value) - {plugin_id}:
                raise CapabilityBoundError(
                    plugin_id, "narrows_tools=True", "narrows tools (only its own filter entry)"
                )
            return
        if key == INFERENCE_PARAMS:
            value = getattr(command.action, "value", None) or {}
            beyond = set(value) - bound.inference_params
            if beyond:
                names = ", ".join(sorted(beyond))
                raise CapabilityBoundError(
                    plugin_id, f"inference_params {{{names}}}", f"overrides {names}"
                )
            return
        if key == REQUEST_WINDOW:
            if not bound.narrows_window:
                raise CapabilityBoundError(
                    plugin_id, "narrows_window=True", "narrows the request window"
                )
            return
    if not bound.allows_key(command.scope, key):
        raise CapabilityBoundError(
            plugin_id,
            f"state key {command.scope.value}:{key}",
            f"writes {command.scope.value}:{key!r}",
        )


def _check_context(
    bound: CapabilityBound, plugin_id: str, command: Command, owners: dict[str, str]
) -> None:
    if isinstance(command.action, Remove):
        raise CapabilityBoundError(
            plugin_id,
            "context entries of its own only",
            "removes every context entry (the runtime clears them after each request)",
        )
    value = command.action.value
    if not isinstance(value, dict):
        value = {}
    bands = {str(entry.get("band")) for entry in value.values() if isinstance(entry, dict)}
    # Bands are StrEnum members: the declared set compares with the strings as it is.
    if not bound.context_bands or not bands <= bound.context_bands:
        allowed = {b.value for b in bound.context_bands}
        extra = ", ".join(sorted(bands - allowed)) or "any band"
        raise CapabilityBoundError(
            plugin_id, f"context_bands {{{extra}}}", f"injects context into {extra}"
        )
    for entry_key in value:
        owner = owners.setdefault(entry_key, plugin_id)
        if owner != plugin_id:
            # Named in sorted order: the failure reads the same whichever plugin came first.
            first, second = sorted((owner, plugin_id))
            raise CapabilityBoundError(
                plugin_id,
                "a context key of its own",
                f"context key {entry_key!r} is written by both {first!r} and {second!r} "
                f"(a context entry belongs to one plugin)",
            )
