"""Request-only context injection and tool-visibility narrowing.

A ``BEFORE_INFERENCE`` hook injects context by staging a write to the
:data:`CONTEXT_MESSAGES` run-scope key (use :func:`inject`). Entries are keyed,
so two plugins never duplicate each other; the loop places them into the next
request only, ordered by ``(band, priority, key)``, and clears the key once the
request is sent. They never reach the transcript. ``inject(..., standing=True)``
writes :data:`STANDING_CONTEXT` instead: those entries go into every request of
the run until replaced or withdrawn, so context that does not change costs no
write per step.

Tool narrowing works the same way through :data:`TOOL_FILTER`: each plugin
writes its own entry (use :class:`ToolFilter`), the loop intersects every entry
with the agent's tools for the request, and a call to a tool the request did
not show is blocked. Nothing here can add a tool the agent does not have.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..state._engine import Command, MergePolicy, Scope

__all__ = [
    "CONTEXT_MESSAGES",
    "INFERENCE_PARAMS",
    "REQUEST_WINDOW",
    "REQUEST_WINDOW_FIELDS",
    "STANDING_CONTEXT",
    "TOOL_FILTER",
    "Band",
    "ContextMessage",
    "ToolFilter",
    "inject",
    "override_params",
    "request_context",
    "start_window_after",
]

CONTEXT_MESSAGES = "awaken.context_messages"
"""Run-scope COMMUTATIVE key: ``{entry key: ContextMessage data}``."""

TOOL_FILTER = "awaken.tool_filter"
"""Run-scope COMMUTATIVE key: ``{plugin id: ToolFilter data}``."""

INFERENCE_PARAMS = "awaken.inference_params"
"""Run-scope COMMUTATIVE key: ``{field: value}`` overriding the agent's
``InferenceParams`` for the next request (last writer per field wins; ``None``
restores the provider default). Write it with :func:`override_params`."""

REQUEST_WINDOW = "awaken.request_window"
"""Run-scope key: ``{"start_after_message_id": id}`` drops that message and
everything before it from the next request (request-only; the transcript is
untouched). Write it with :func:`start_window_after`. An optional
``"replace_content": {message_id: text}`` sends those *tool results* with the
given text in the next request (e.g. a cut oversized result)."""

REQUEST_WINDOW_FIELDS = frozenset({"start_after_message_id", "replace_content"})
"""The request-window fields this core honours (a feature probe for plugins)."""


class Band(enum.StrEnum):
    """Where a context message lands in the request."""

    SYSTEM = "system"
    """Joined into the system prompt."""
    SESSION = "session"
    """Right after the system prompt."""
    CONVERSATION = "conversation"
    """Just before the newest user message."""
    SUFFIX = "suffix"
    """After everything else."""


BAND_ORDER = {Band.SYSTEM: 0, Band.SESSION: 1, Band.CONVERSATION: 2, Band.SUFFIX: 3}


class ContextMessage(BaseModel):
    """One keyed piece of request-only context.

    ``cooldown_steps`` throttles re-injection: after the entry is placed into a
    request, writes of the same key are ignored for that many further steps.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)
    key: str = Field(min_length=1)
    band: Band
    content: str
    priority: int = 0
    cooldown_steps: int = Field(default=0, ge=0)
    role: Literal["system", "user"] = "system"


STANDING_CONTEXT = "awaken.standing_context"
"""Run-scope COMMUTATIVE key: ``{entry key: ContextMessage data, or None once withdrawn}``.

Standing entries go into every request of the run until they are replaced or
withdrawn: a plugin whose context does not change stages nothing step after
step. Written with ``inject(..., standing=True)``; the same bound rules apply
(declared bands, one owning plugin per entry key). Plugins write it with
:func:`inject`; one that measures the request (as compaction does) reads it
beside :data:`CONTEXT_MESSAGES`."""


def request_context(
    standing: dict[str, Any] | None, request_only: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The context entries the next request carries, as stored data by entry key: the
    :data:`STANDING_CONTEXT` entries still in force (a withdrawn one is ``None``) under
    the :data:`CONTEXT_MESSAGES` ones, which win by key. For plugins that measure the
    request (compaction) as much as for the loop that builds it."""
    if not standing:
        return request_only
    merged = {key: data for key, data in standing.items() if data is not None}
    if request_only:
        merged.update(request_only)
    return merged or None


def inject(
    *messages: ContextMessage, standing: bool = False, withdraw: Iterable[str] = ()
) -> Command:
    """The command that adds ``messages`` to the next request's context.

    ``standing=True``: they stay in every later request of the run too, until
    injected again (replaced) or named in ``withdraw`` (keys of standing
    entries to take away, also only with ``standing=True``).
    """
    value: dict[str, Any] = {m.key: m.model_dump(mode="json") for m in messages}
    if not standing:
        if withdraw:
            raise ValueError("withdraw names standing entries: use it with standing=True")
        return Command.set(CONTEXT_MESSAGES, value, scope=Scope.RUN, merge=MergePolicy.COMMUTATIVE)
    for key in withdraw:
        value.setdefault(key, None)
    return Command.set(STANDING_CONTEXT, value, scope=Scope.RUN, merge=MergePolicy.COMMUTATIVE)


def override_params(**fields: Any) -> Command:
    """The command overriding inference parameters for the next request only.

    Fields are those of ``InferenceParams`` (temperature, max_output_tokens,
    top_p, reasoning_effort, stop); the plugin's bound must list them in
    ``CapabilityBound.inference_params``.
    """
    from ..models._model import InferenceParams

    unknown = set(fields) - set(InferenceParams.model_fields)
    if unknown:
        raise ValueError(
            f"unknown inference parameter(s) {', '.join(sorted(unknown))}; valid: "
            f"{', '.join(InferenceParams.model_fields)}"
        )
    checked = InferenceParams.model_validate(fields).model_dump(mode="json")
    return Command.set(
        INFERENCE_PARAMS,
        {name: checked[name] for name in fields},
        scope=Scope.RUN,
        merge=MergePolicy.COMMUTATIVE,
    )


def start_window_after(message_id: str) -> Command:
    """The command that makes the next request start after ``message_id``.

    Compaction uses it to replace a summarized prefix with its summary. The
    loop never splits a tool call from its results: if the cut would, the
    window starts earlier. The agent's context policy still applies; the
    later of the two starts wins. Needs ``CapabilityBound.narrows_window``.
    """
    return Command.set(REQUEST_WINDOW, {"start_after_message_id": message_id}, scope=Scope.RUN)


class ToolFilter(BaseModel):
    """One plugin's narrowing of the tools the next request shows.

    ``only``: if set, the plugin allows just these tool ids. ``hide``: tool ids
    the plugin hides. Filters of several plugins intersect.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)
    only: frozenset[str] | None = None
    hide: frozenset[str] = frozenset()

    def command(self, plugin_id: str) -> Command:
        """The command that installs this filter as ``plugin_id``'s entry."""
        data: dict[str, Any] = {
            "only": sorted(self.only) if self.only is not None else None,
            "hide": sorted(self.hide),
        }
        return Command.set(
            TOOL_FILTER, {plugin_id: data}, scope=Scope.RUN, merge=MergePolicy.COMMUTATIVE
        )


def visible_tools(agent_tools: Iterable[str], filters: dict[str, Any] | None) -> list[str]:
    """Agent tool ids that every filter lets through, in the agent's order."""
    ids = list(agent_tools)
    if not filters:
        return ids
    allowed = set(ids)
    for entry in filters.values():
        only = entry.get("only")
        if only is not None:
            allowed.intersection_update(only)
        allowed.difference_update(entry.get("hide", ()))
    return [i for i in ids if i in allowed]
