"""The commit-time capability check: may this plugin stage this command?

Ordinary keys must be declared in the plugin's bound. The runtime's own
request-only keys have rules of their own: context entries only in the
plugin's declared bands, a tool filter only under its own plugin id, inference
parameters only those the bound names, a request window only with
``narrows_window``.
"""

from __future__ import annotations

from .._errors import CapabilityBoundError
from ..plugins._context import CONTEXT_MESSAGES, INFERENCE_PARAMS, REQUEST_WINDOW, TOOL_FILTER
from ..plugins._plugin import CapabilityBound
from ..state._engine import Command, Scope

__all__ = ["check_bound"]

_RUN = Scope.RUN


def check_bound(bound: CapabilityBound, plugin_id: str, command: Command) -> None:
    """Raise ``CapabilityBoundError`` if ``command`` is outside ``plugin_id``'s bound."""
    key = command.key
    if command.scope is _RUN:
        if key == CONTEXT_MESSAGES:
            value = getattr(command.action, "value", None) or {}
            bands = {str(entry.get("band")) for entry in value.values() if isinstance(entry, dict)}
            allowed = {b.value for b in bound.context_bands}
            if not allowed or not bands <= allowed:
                extra = ", ".join(sorted(bands - allowed)) or "any band"
                raise CapabilityBoundError(
                    plugin_id, f"context_bands {{{extra}}}", f"injects context into {extra}"
                )
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
