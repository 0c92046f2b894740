"""A server's elicitation as a suspended run (``AwaitReason.USER_INPUT``).

On 2026-07-28 connections a tool that needs input answers ``tools/call`` with
an ``InputRequiredResult``: the request is over, nothing waits on the server,
so awaken can park the run for as long as a human takes (in another process
too). The ticket's payload carries the server's form; the human answers with
``Respond(value)`` (the form's content), and because the payload sets
``ANSWER_TO_TOOL`` the runtime calls the tool again with that answer: the
call is made anew and the server's same question is answered at once.
Declining is ``Deny`` (the model reads that the user declined).

On handshake-era connections the server asks with an ``elicitation/create``
request while it holds the call open, so the run cannot be parked; that
request is refused with an error saying so, and the tool reports it.
Sampling and roots requests are refused the same way (awaken offers neither).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from awaken_runtime import ANSWER_TO_TOOL, AwaitReason, SuspendCall

__all__ = ["ask", "refuse_handshake_elicitation"]


async def refuse_handshake_elicitation(
    context: Any, params: types.ElicitRequestParams
) -> types.ErrorData:
    """The elicitation callback: a handshake-era request cannot park the run."""
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message=(
            "awaken cannot ask its user in the middle of a call on this connection "
            "(protocol before 2026-07-28); ask for what you need in the tool's arguments"
        ),
    )


def _form(request: types.ElicitRequest) -> dict[str, Any]:
    params = request.params
    out: dict[str, Any] = {"message": params.message, "mode": params.mode}
    if isinstance(params, types.ElicitRequestFormParams):
        out["requested_schema"] = params.requested_schema
    else:
        out["url"] = getattr(params, "url", None)
    return out


def ask(
    server: str, tool: str, result: types.InputRequiredResult, answer: Any
) -> tuple[types.InputResponses | None, Any]:
    """Responses for ``result`` from ``answer`` (then spent), or ``SuspendCall`` to get one.

    Raises ``ValueError`` for input other than elicitation (sampling, roots).
    """
    requests = result.input_requests or {}
    if not requests:
        return None, answer
    others = sorted({r.method for r in requests.values() if not isinstance(r, types.ElicitRequest)})
    if others:
        raise ValueError(
            f"MCP tool {tool!r} on server {server!r} asked for {', '.join(others)}, which "
            f"awaken does not offer"
        )
    if answer is not None and len(requests) == 1:
        (key,) = requests
        content = answer if isinstance(answer, dict) else {"value": answer}
        return {key: types.ElicitResult(action="accept", content=content)}, None
    if answer is not None and isinstance(answer, dict) and set(answer) == set(requests):
        return {k: types.ElicitResult(action="accept", content=v) for k, v in answer.items()}, None
    forms = {k: _form(r) for k, r in requests.items() if isinstance(r, types.ElicitRequest)}
    payload: dict[str, Any] = {
        "mcp_server": server,
        "tool": tool,
        ANSWER_TO_TOOL: True,
        "hint": "answer with Respond(<the form's content>)"
        + (" keyed by request id" if len(forms) > 1 else ""),
        "requests": forms,
    }
    raise SuspendCall(AwaitReason.USER_INPUT, payload)
