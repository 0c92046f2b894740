"""The request-window contract: how the plugin drops the covered prefix from a request.

The core reads the run-scope key ``awaken_runtime.REQUEST_WINDOW``
(``"awaken.request_window"``) when it assembles the next request:
``{"start_after_message_id": id}`` starts the window after that message
(never earlier than the context policy's start, moved back so no tool result
loses its call) and the key is cleared after the request, like context
messages. Writing it needs ``CapabilityBound.narrows_window``.

The plugin also writes ``"replace_content": {message_id: text}`` (tool results
over the cap). The core applies it because it lists it in
``awaken_runtime.REQUEST_WINDOW_FIELDS`` (:func:`core_supports_replacements`);
with an older core that does not, the plugin caps nothing.

With a core that has no request window at all (:func:`core_supports_request_window`
is false) the key is declared as a plain run-scope state key, so the same
commands still commit; the loop then just does not honour them.
"""

from __future__ import annotations

from typing import Any

import awaken_runtime
from awaken_runtime import CapabilityBound, Command, Scope, StateKeyDecl

__all__ = [
    "REQUEST_WINDOW",
    "core_supports_replacements",
    "core_supports_request_window",
    "window_bound_fields",
    "window_clear",
    "window_command",
]

REQUEST_WINDOW: str = str(getattr(awaken_runtime, "REQUEST_WINDOW", "awaken.request_window"))
"""The run-scope key the loop reads the request window from."""


def core_supports_request_window() -> bool:
    """Whether the installed core honours :data:`REQUEST_WINDOW` (feature probe)."""
    return hasattr(awaken_runtime, "REQUEST_WINDOW") and (
        "narrows_window" in CapabilityBound.model_fields
    )


def core_supports_replacements() -> bool:
    """Whether the core applies ``replace_content`` of the request window."""
    fields = getattr(awaken_runtime, "REQUEST_WINDOW_FIELDS", ())
    return core_supports_request_window() and "replace_content" in fields


def window_bound_fields() -> dict[str, Any]:
    """Bound fields that allow writing the window: the flag, or the legacy key."""
    if core_supports_request_window():
        return {"narrows_window": True}
    return {"state_keys": {StateKeyDecl(key=REQUEST_WINDOW, scope=Scope.RUN)}}


def window_command(
    *, start_after: str | None, replace_content: dict[str, str] | None = None
) -> Command:
    """The write that shapes the next request's window."""
    value: dict[str, Any] = {"start_after_message_id": start_after}
    if replace_content:
        value["replace_content"] = dict(replace_content)
    return Command.set(REQUEST_WINDOW, value, scope=Scope.RUN)


def window_clear() -> Command:
    """Removes a window left in the store (only needed while the core does not clear it)."""
    return Command.remove(REQUEST_WINDOW, scope=Scope.RUN)
