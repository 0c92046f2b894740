"""The gate and the AFTER_TOOL hook share one verdict per call and snapshot, never a stale one."""

from __future__ import annotations

from typing import Any

from awaken_ext_permissions import PermissionsConfig
from awaken_ext_permissions._plugin import _Gatekeeper
from awaken_ext_permissions._remember import REMEMBERED_KEY, call_key
from awaken_runtime import (
    Block,
    PhaseContext,
    PhaseHookPoint,
    RunInfo,
    Scope,
    Store,
    Suspend,
    ToolCall,
    ToolOutput,
)


def context(store: Store, call: ToolCall, agent: str = "a") -> PhaseContext:
    run = RunInfo("r1", "t1", agent, "default", "default", 1)
    return PhaseContext(
        PhaseHookPoint.AFTER_TOOL,
        store,
        run,
        [],
        "permissions",
        tool_call=call,
        tool_output=ToolOutput(content="ok"),
    )


def remembering(keeper: _Gatekeeper, call: ToolCall, behavior: str, agent: str = "a") -> Store:
    owner = keeper.owner(context(Store({}), call, agent))
    key = call_key(call.name, call.arguments, owner)
    entry: dict[str, Any] = {
        "tool": call.name,
        "arguments": call.arguments,
        "behavior": behavior,
        "by": "u",
        "at": "2026-01-01T00:00:00+00:00",
        "owner": owner,
    }
    return Store({(Scope.THREAD, REMEMBERED_KEY): {key: entry}})


async def test_the_audit_records_the_verdict_the_gate_decided_on() -> None:
    keeper = _Gatekeeper(PermissionsConfig(ask=["write_file"], allow=["read_file"]))
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a"})
    store = Store({})
    assert keeper.gate(context(store, call), call) is None
    reaction = await keeper.record(context(store, call))
    assert reaction is not None
    ((_call_id, entry),) = reaction.commands[0].action.value.items()  # type: ignore[union-attr]
    assert entry["policy"] == "allow" and entry["decision"] == "allow"


async def test_a_remembered_decision_in_a_newer_snapshot_is_not_answered_from_the_cache() -> None:
    keeper = _Gatekeeper(PermissionsConfig(ask=["write_file"]))
    call = ToolCall(id="c1", name="write_file", arguments={"path": "a"})
    assert isinstance(keeper.gate(context(Store({}), call), call), Suspend)
    # Same call object, but the snapshot now remembers a deny for it: a new verdict.
    denied = remembering(keeper, call, "deny")
    assert isinstance(keeper.gate(context(denied, call), call), Block)
    reaction = await keeper.record(context(denied, call))
    assert reaction is not None
    ((_call_id, entry),) = reaction.commands[0].action.value.items()  # type: ignore[union-attr]
    assert entry["policy"] == "deny" and entry["source"] == "thread"


def test_another_agent_or_an_equal_but_other_call_gets_its_own_verdict() -> None:
    keeper = _Gatekeeper(PermissionsConfig(ask=["write_file"]))
    call = ToolCall(id="c1", name="write_file", arguments={"path": "a"})
    allowed_for_a = remembering(keeper, call, "allow", agent="a")
    assert keeper.gate(context(allowed_for_a, call, agent="a"), call) is None
    # Agent b did not remember anything: asked, although the call and store are the same.
    assert isinstance(keeper.gate(context(allowed_for_a, call, agent="b"), call), Suspend)
    other = ToolCall(id="c2", name="write_file", arguments={"path": "b"})
    assert isinstance(keeper.gate(context(allowed_for_a, other, agent="a"), other), Suspend)
