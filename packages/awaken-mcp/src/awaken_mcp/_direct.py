"""A tool called directly over MCP, as a run of the agent that lists it.

So that policy holds on every path, a direct ``tools/call`` is not a bare
``tool.call``: it is a run of the serving agent on a fresh thread of the
caller's profile, in which the model's turn is *given* (the one call the MCP
client asked for) instead of inferred. Everything a run does to a call then
happens to it: argument coercion, the agent's whole gate chain (the
permissions plugin's allow / deny / ask, and any other gate), observers,
AFTER_TOOL hooks (the permissions audit entry), tickets for a call that
parks, and the thread checkpointed in the store.

The given turn comes from :class:`GivenTurns`, a wrapper ``install`` puts
around every provider of the runtime: while a direct call is being served (a
context variable, so only that task sees it) the first inference answers with
the call and the next one, once the call's result is in, with an empty final
text, so no model is ever asked. Every other run passes straight through to
the wrapped provider.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from awaken_runtime import (
    InferenceRequest,
    InferenceResponse,
    RunState,
    Runtime,
    StreamDelta,
    ToolCall,
)

__all__ = ["DirectCall", "GivenTurns", "given", "install", "new_call_id", "new_ids", "run_direct"]


@dataclass
class DirectCall:
    """The call a direct run makes, and whether the agent could see the tool when it did."""

    call: ToolCall
    visible: bool | None = None
    """``False``: the agent's request did not offer the tool (a plugin hid it)."""


_GIVEN: ContextVar[DirectCall | None] = ContextVar("awaken_mcp_direct_call", default=None)


@contextlib.contextmanager
def given(direct: DirectCall) -> Iterator[DirectCall]:
    """Runs (and resumes) inside this block make ``direct``'s call instead of inferring."""
    token = _GIVEN.set(direct)
    try:
        yield direct
    finally:
        _GIVEN.reset(token)


class GivenTurns:
    """A provider that gives a direct call's turns and passes every other run through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        # warm_up, pricing and whatever else the runtime asks the real provider.
        return getattr(self.inner, name)

    def stream(self, request: InferenceRequest) -> AsyncIterator[StreamDelta | InferenceResponse]:
        """The wrapped provider's stream, or the given turn of a direct call."""
        direct = _GIVEN.get()
        if direct is None:
            stream: AsyncIterator[StreamDelta | InferenceResponse] = self.inner.stream(request)
            return stream
        return _given_turn(request, direct)


async def _given_turn(
    request: InferenceRequest, direct: DirectCall
) -> AsyncIterator[StreamDelta | InferenceResponse]:
    call = direct.call
    answered = any(m.role == "tool" and m.tool_call_id == call.id for m in request.messages)
    if answered:
        yield InferenceResponse(text="", finish_reason="stop")
        return
    direct.visible = any(t.id == call.name for t in request.tools)
    yield InferenceResponse(tool_calls=[call], finish_reason="tool_calls")


def install(runtime: Runtime) -> None:
    """Wrap every provider of ``runtime`` in :class:`GivenTurns` (once; idempotent)."""
    providers = runtime.registries.providers
    changed = False
    for pid, executor in list(providers.items()):
        if not isinstance(executor, GivenTurns):
            providers[pid] = GivenTurns(executor)
            changed = True
    if changed:
        # Agents resolved before (a catalog resolves every agent at start) hold the
        # unwrapped provider; resolving again picks the wrapper up. The snapshot and its
        # fingerprint do not depend on the provider object, so parked tickets stay valid.
        runtime._resolved.clear()


def new_call_id() -> str:
    """A fresh tool call id."""
    return f"call_{uuid.uuid4().hex}"


def new_ids() -> tuple[str, str]:
    """A fresh ``(thread id, run id)`` pair."""
    return f"thread_{uuid.uuid4().hex}", f"run_{uuid.uuid4().hex}"


async def run_direct(
    runtime: Runtime,
    agent_id: str,
    direct: DirectCall,
    *,
    profile: str,
    thread_id: str,
    run_id: str,
) -> RunState:
    """Run ``agent_id`` on a new thread, its one model turn being ``direct``'s call."""
    args = ", ".join(sorted(direct.call.arguments))
    prompt = f"An MCP client called the tool {direct.call.name!r} directly ({args or 'no'} args)."
    with given(direct):
        return await runtime.run(
            agent_id, prompt, thread_id=thread_id, run_id=run_id, profile_id=profile
        )
