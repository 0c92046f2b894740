"""Whether anything receives litellm's success logging for one request.

litellm ends every streamed request with success handlers on a task of the
event loop: they build a standard logging record (copying the request's
messages), price the call and hand the record to the configured callbacks.
With no callback configured the record goes nowhere, yet at 10,000 messages
it costs tens of milliseconds of the loop a step and runs beside the agent's
next step. :class:`LiteLLMExecutor` closes such a stream once its usage has
arrived, before litellm schedules the handlers; a request that something
listens to is read to its end, so its callbacks run as litellm documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["SuccessLogging", "call_kwargs", "success_listened"]

SuccessLogging = Literal["auto", "always"]
"""``auto``: litellm's success logging runs when a callback would receive it;
``always``: every stream is read to its end, so it always runs."""

# litellm's module-level lists (``litellm.callbacks`` holds CustomLogger
# instances; the other two are filled from ``success_callback`` by litellm itself).
_GLOBAL = ("callbacks", "success_callback", "_async_success_callback")
# ... and their per-request spellings, which a ModelSpec's ``extra`` may pass.
_PER_REQUEST = ("callbacks", "success_callback")
# The per-request lists litellm takes callbacks out of at the start of each call.
_CONSUMED = ("callbacks", "success_callback", "failure_callback")


def success_listened(litellm: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether a callback, or litellm's own budget tracking, reads the request's success."""
    if any(getattr(litellm, name, None) for name in _GLOBAL):
        return True
    if getattr(litellm, "max_budget", 0):  # litellm adds each call's cost to its budget
        return True
    return any(kwargs.get(name) for name in _PER_REQUEST)


def call_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` for one ``litellm.acompletion`` call, with its own callback lists.

    litellm moves async callbacks out of a request's ``success_callback`` list
    when the call starts, so handing it the same list twice (a retry, a
    fallback, the spec's next request) would silence them from then on.
    """
    if not any(name in kwargs for name in _CONSUMED):
        return kwargs
    return {k: list(v) if k in _CONSUMED and isinstance(v, list) else v for k, v in kwargs.items()}
