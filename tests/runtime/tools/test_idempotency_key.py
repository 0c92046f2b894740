"""``ToolCallContext.idempotency_key`` (issue 16, item 8): one stable key per call.

The key is the same for every execution of one call (here: a tool that asks
for permission, then runs again once approved, in a second runtime over the
same store) and differs between calls, runs and provider-duplicated ids. It is
64 hex digits whatever the ids contain.
"""

from __future__ import annotations

import re
from typing import Any

from awaken_runtime import (
    Approve,
    AwaitReason,
    InMemoryStore,
    Phase,
    ScriptedTurn,
    SuspendCall,
    ToolCall,
    ToolCallContext,
)

HEX64 = re.compile(r"[0-9a-f]{64}")


def charge_tool(keys: list[tuple[str, str, str]], charged: list[str]) -> Any:
    """Asks for permission first; charges (once per key, like a payment API) once approved."""

    async def charge(amount: int, ctx: ToolCallContext) -> str:
        """Charge a card."""
        keys.append((ctx.run_id, ctx.call_id, ctx.idempotency_key))
        if ctx.decision is None:
            raise SuspendCall(AwaitReason.TOOL_PERMISSION, {"amount": amount})
        if ctx.idempotency_key not in charged:
            charged.append(ctx.idempotency_key)
        return f"charged {amount}"

    return charge


async def test_an_approved_rerun_in_another_runtime_sees_the_same_key(make_runtime: Any) -> None:
    keys: list[tuple[str, str, str]] = []
    charged: list[str] = []
    store = InMemoryStore()
    turns = [ScriptedTurn.call("charge", {"amount": 3}), "done"]
    first = make_runtime(turns, tools=[charge_tool(keys, charged)], store=store)
    state = await first.run("charge 3", thread_id="t")
    (ticket,) = state.tickets
    second = make_runtime(turns[1:], tools=[charge_tool(keys, charged)], store=store)
    state = await second.runtime.resume(ticket.model_dump_json(), Approve())
    assert state.phase is Phase.ENDED
    assert len(keys) == 2
    (run_a, call_a, key_a), (run_b, call_b, key_b) = keys
    assert (run_a, call_a) == (run_b, call_b) == (ticket.run_id, ticket.call.id)
    assert key_a == key_b and HEX64.fullmatch(key_a)
    assert len(charged) == 1


async def test_every_other_call_gets_another_key(make_runtime: Any) -> None:
    keys: list[tuple[str, str, str]] = []

    async def note(n: int, ctx: ToolCallContext) -> str:
        """Note a number."""
        keys.append((ctx.run_id, ctx.call_id, ctx.idempotency_key))
        return str(n)

    # The provider sends one id for every call, in both runs.
    same = ScriptedTurn(
        tool_calls=[ToolCall(id="c", name="note", arguments={"n": i}) for i in (1, 2)]
    )
    rig = make_runtime([same, "done", same, "done"], tools=[note])
    await rig.run("one", thread_id="t")
    await rig.run("two", thread_id="t")
    assert len(keys) == 4
    assert len({k for _, _, k in keys}) == 4
    assert len({r for r, _, _ in keys}) == 2


def test_the_key_is_hex_whatever_the_ids_hold() -> None:
    from awaken_runtime import CancellationToken

    ctx = ToolCallContext(
        store=None,  # type: ignore[arg-type]
        run_id="run\n\u202e",
        thread_id="t",
        call_id="id with spaces \ud800 😀",
        tool_id="x",
        cancel=CancellationToken(),
    )
    other = ToolCallContext(
        store=None,  # type: ignore[arg-type]
        run_id="run\n\u202eid with spaces",
        thread_id="t",
        call_id=" \ud800 😀",
        tool_id="x",
        cancel=CancellationToken(),
    )
    assert HEX64.fullmatch(ctx.idempotency_key)
    # The separator keeps (run, call) pairs apart that concatenate alike.
    assert ctx.idempotency_key != other.idempotency_key
