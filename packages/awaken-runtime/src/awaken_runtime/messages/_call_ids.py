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

from ._message import Message, ToolCall, new_id, with_depth_limit

__all__ = ["call_ids_of", "prepare_calls"]


def call_ids_of(messages: Iterable[Message]) -> set[str]:
    """Every tool-call id the assistant messages of ``messages`` carry."""
    return {c.id for m in messages if m.tool_calls for c in m.tool_calls}


def prepare_calls(
    calls: list[ToolCall], seen: set[str]
) -> tuple[list[ToolCall], dict[str, str] | None]:
    """``calls`` with unique ids and no poison arguments, as the runtime keeps them.

    A call whose id is already in ``seen`` (or empty) gets a fresh id; a call
    whose arguments nest deeper than ``MAX_ARGUMENT_DEPTH`` loses them and
    carries the argument error instead (see ``with_depth_limit``). Returns the
    calls (``calls`` itself when nothing changed) and the map ``runtime id ->
    provider id`` of the replaced non-empty ids (``None`` when nothing
    changed). Adds the ids it returns to ``seen``.
    """
    out: list[ToolCall] | None = None
    renamed: dict[str, str] = {}
    for i, call in enumerate(calls):
        cid = call.id
        reused = not cid or cid in seen
        deep = False
        for value in call.arguments.values():  # one flat pass for the usual flat arguments
            if isinstance(value, (dict, list)):
                deep = with_depth_limit(call) is not call
                break
        if not (reused or deep):
            seen.add(cid)
            continue
        if out is None:
            out = list(calls)
        if deep:
            call = with_depth_limit(call)
        if reused:
            fresh = new_id("call_")
            call = call.model_copy(update={"id": fresh})
            if cid:
                renamed[fresh] = cid
            cid = fresh
        seen.add(cid)
        out[i] = call
    if out is None:
        return calls, None
    return out, renamed
