"""Tool-call ids unique inside the runtime, whatever ids the provider sent.

Results, tickets, events and the transcript pair a result with its call by
id, so two calls sharing an id would get each other's results. Some servers
send the same id for every call (or restart their numbering each response):
such a call gets a fresh id, and the assistant message keeps the provider's
id under :data:`~awaken_runtime.messages._message.PROVIDER_CALL_IDS` so the
outgoing request (``to_openai``) speaks the provider's ids again.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._message import Message, ToolCall, new_id

__all__ = ["call_ids_of", "unique_calls"]


def call_ids_of(messages: Iterable[Message]) -> set[str]:
    """Every tool-call id the assistant messages of ``messages`` carry."""
    return {c.id for m in messages if m.tool_calls for c in m.tool_calls}


def unique_calls(
    calls: list[ToolCall], seen: set[str]
) -> tuple[list[ToolCall], dict[str, str] | None]:
    """``calls`` with every id already in ``seen`` (or empty) replaced by a fresh one.

    Returns the calls (``calls`` itself when nothing changed) and the map
    ``runtime id -> provider id`` of the replaced non-empty ids (``None`` when
    nothing changed). Adds the ids it returns to ``seen``.
    """
    out: list[ToolCall] | None = None
    renamed: dict[str, str] = {}
    for i, call in enumerate(calls):
        cid = call.id
        if cid and cid not in seen:
            seen.add(cid)
            continue
        if out is None:
            out = list(calls)
        fresh = new_id("call_")
        seen.add(fresh)
        out[i] = call.model_copy(update={"id": fresh})
        if cid:
            renamed[fresh] = cid
    if out is None:
        return calls, None
    return out, renamed
