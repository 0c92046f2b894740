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
request while it holds the call open: the call is held (``_held``), the run
parks with the same kind of ticket, and the answer goes back on the open
call. Sampling and roots requests are refused (awaken offers neither).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from awaken_runtime import ANSWER_TO_TOOL, AwaitReason, SuspendCall

from ._held import elicit_result

__all__ = ["ask", "held_form", "suspend_for"]


def _form(params: types.ElicitRequestParams) -> dict[str, Any]:
    out: dict[str, Any] = {"message": params.message, "mode": params.mode}
    if isinstance(params, types.ElicitRequestFormParams):
        out["requested_schema"] = params.requested_schema
    else:
        out["url"] = getattr(params, "url", None)
    return out


def _params(request: Any) -> types.ElicitRequestParams | None:
    return request.params if isinstance(request, types.ElicitRequest) else None


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
        ((key, request),) = requests.items()
        return {key: elicit_result(answer, _params(request))}, None
    if answer is not None and isinstance(answer, dict) and set(answer) == set(requests):
        return {k: elicit_result(v, _params(requests[k])) for k, v in answer.items()}, None
    forms = {k: _form(r.params) for k, r in requests.items() if isinstance(r, types.ElicitRequest)}
    raise suspend_for(server, tool, forms)


def suspend_for(server: str, tool: str, forms: dict[str, dict[str, Any]]) -> SuspendCall:
    """The ``SuspendCall`` that parks a call on the server's questions (keyed forms)."""
    payload: dict[str, Any] = {
        "mcp_server": server,
        "tool": tool,
        ANSWER_TO_TOOL: True,
        "hint": "answer with Respond(<the form's content>)"
        + (" keyed by request id" if len(forms) > 1 else "")
        + ', or Respond({"action": "decline"})',
        "requests": forms,
    }
    return SuspendCall(AwaitReason.USER_INPUT, payload)


def held_form(params: types.ElicitRequestParams) -> dict[str, dict[str, Any]]:
    """The forms of a question asked on an open call (handshake era): one, keyed ``elicitation``."""
    return {"elicitation": _form(params)}
