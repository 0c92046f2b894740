"""The flow-validation example: an out-of-order call is blocked, then allowed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from awaken_runtime import Scope

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "flow_validation.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flow_validation_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_refund_before_lookup_is_blocked_then_allowed(example: ModuleType) -> None:
    runtime = example.build_runtime(example.DEMO_TURNS)
    state = await runtime.run("support", "Refund A-1", thread_id="t")
    results = [
        (m.name, m.text, m.metadata.get("is_error", False))
        for m in state.new_messages
        if m.role == "tool"
    ]
    assert results[0][0] == "issue_refund" and results[0][2] is True
    assert "needs lookup_order first" in results[0][1]
    assert results[1][0] == "lookup_order" and results[1][2] is False
    assert results[2] == ("issue_refund", "refunded 42.00 on A-1", False)
    assert list(state.value("refund_flow.looked_up", Scope.THREAD)) == ["A-1"]
    assert state.end_cause.kind == "natural_end"


async def test_lookup_of_another_order_does_not_unlock_a_refund(example: ModuleType) -> None:
    from awaken_runtime import ScriptedTurn

    turns = [
        ScriptedTurn.call("lookup_order", {"order_id": "B-2"}),
        ScriptedTurn.call("issue_refund", {"order_id": "A-1", "amount": 1.0}),
        "ok",
    ]
    state = await example.build_runtime(turns).run("support", "Refund A-1", thread_id="t")
    refund = [m for m in state.new_messages if m.role == "tool"][-1]
    assert refund.metadata.get("is_error") is True


async def test_transition_persists_across_runs_of_the_thread(example: ModuleType) -> None:
    from awaken_runtime import ScriptedTurn

    turns = [
        ScriptedTurn.call("lookup_order", {"order_id": "A-1"}),
        "looked up",
        ScriptedTurn.call("issue_refund", {"order_id": "A-1", "amount": 1.0}),
        "refunded",
    ]
    runtime = example.build_runtime(turns)
    await runtime.run("support", "look it up", thread_id="t")
    second = await runtime.run("support", "now refund", thread_id="t")
    refund = [m for m in second.new_messages if m.role == "tool"][-1]
    assert refund.text == "refunded 1.00 on A-1"


async def test_lookup_and_refund_in_one_response_is_blocked(example: ModuleType) -> None:
    """Execution order is not enough: the model picked 9999 before it saw the 42.00 total."""
    from awaken_runtime import ScriptedTurn, ToolCall

    both = ScriptedTurn(
        tool_calls=[
            ToolCall(id="c1", name="lookup_order", arguments={"order_id": "A-1"}),
            ToolCall(id="c2", name="issue_refund", arguments={"order_id": "A-1", "amount": 9999}),
        ]
    )
    turns = [both, ScriptedTurn.call("issue_refund", {"order_id": "A-1", "amount": 42.0}), "ok"]
    state = await example.build_runtime(turns).run("support", "Refund A-1", thread_id="t")
    results = [(m.name, m.text) for m in state.new_messages if m.role == "tool"]
    assert results[0][0] == "lookup_order"
    assert results[1][0] == "issue_refund" and "read the lookup" in results[1][1]
    assert results[2] == ("issue_refund", "refunded 42.00 on A-1")


async def test_a_refund_above_the_looked_up_total_is_blocked(example: ModuleType) -> None:
    from awaken_runtime import ScriptedTurn

    turns = [
        ScriptedTurn.call("lookup_order", {"order_id": "A-1"}),
        ScriptedTurn.call("issue_refund", {"order_id": "A-1", "amount": 9999}),
        "ok",
    ]
    state = await example.build_runtime(turns).run("support", "Refund A-1", thread_id="t")
    refund = [m for m in state.new_messages if m.role == "tool"][-1]
    assert refund.metadata.get("is_error") is True
    assert "at most the order total 42.00" in refund.text
