"""ToolCallExecutor alone: what runs, what is blocked or parked, and what is recorded."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_runtime import (
    AwaitReason,
    Block,
    CapabilityBound,
    Command,
    Contributions,
    Scope,
    Suspend,
    ToolCall,
    ToolDescriptor,
    ToolError,
    ToolOutput,
    tool,
)
from awaken_runtime.run._phases import PhaseEngine
from awaken_runtime.run._signals import End
from awaken_runtime.run._tool_calls import ToolCallExecutor


def executor(ctx: Any) -> ToolCallExecutor:
    return ToolCallExecutor(ctx, PhaseEngine(ctx))


def counting_tool(calls: list[dict[str, Any]]) -> Any:
    @tool
    def transfer(amount: int) -> str:
        """Move money.

        Args:
            amount: how much
        """
        calls.append({"amount": amount})
        return f"moved {amount}"

    return transfer


def gate_plugin(make_plugin: Any, pid: str, decide: Any) -> Any:
    def gate(ctx: Any, call: ToolCall) -> Any:
        return decide(call)

    return make_plugin(pid, CapabilityBound(tool_gates=True), Contributions(tool_gates=[gate]))


def results(ctx: Any) -> list[tuple[str, str, bool]]:
    return [
        (m.tool_call_id, m.text, bool(m.metadata.get("is_error")))
        for m in ctx.transcript.view()
        if m.role == "tool"
    ]


@pytest.mark.parametrize("name", ["nope", "Transfer", "transfer ", ""])
async def test_unknown_tool_is_blocked_and_nothing_runs(make_context, name):
    ran: list[Any] = []
    ctx = make_context(tools=[counting_tool(ran)])
    await executor(ctx).call(ToolCall(id="c1", name=name, arguments={"amount": 1}))
    ((call_id, text, is_error),) = results(ctx)
    assert call_id == "c1" and is_error and "Unknown tool" in text and "transfer" in text
    assert ran == []


async def test_block_beats_suspend_and_nothing_is_parked(make_context, make_plugin):
    ran: list[Any] = []
    ctx = make_context(
        tools=[counting_tool(ran)],
        plugins=[
            gate_plugin(
                make_plugin, "asker", lambda c: Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
            ),
            gate_plugin(make_plugin, "denier", lambda c: Block(reason="no transfers")),
        ],
    )
    await executor(ctx).call(ToolCall(id="c1", name="transfer", arguments={"amount": 5}))
    assert results(ctx) == [("c1", "no transfers", True)]
    assert ran == [] and ctx.parked == []


async def test_suspend_parks_the_call_without_running_it(make_context, make_plugin):
    ran: list[Any] = []
    ctx = make_context(
        tools=[counting_tool(ran)],
        plugins=[
            gate_plugin(
                make_plugin,
                "asker",
                lambda c: Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={"q": 1}),
            )
        ],
    )
    await executor(ctx).call(ToolCall(id="c1", name="transfer", arguments={"amount": 5}))
    assert ran == [] and results(ctx) == []
    ((parked,),) = [ctx.parked]
    assert parked.call.id == "c1" and parked.reason is AwaitReason.TOOL_PERMISSION
    assert parked.payload == {"q": 1}


async def test_approval_lifts_a_suspend_but_not_a_block(make_context, make_plugin):
    ran: list[Any] = []
    asker = gate_plugin(
        make_plugin, "asker", lambda c: Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
    )
    ctx = make_context(tools=[counting_tool(ran)], plugins=[asker])
    await executor(ctx).call(
        ToolCall(id="c1", name="transfer", arguments={"amount": 5}), approved=True
    )
    assert ran == [{"amount": 5}] and ctx.parked == []
    denier = gate_plugin(make_plugin, "denier", lambda c: Block(reason="never"))
    ctx = make_context(tools=[counting_tool(ran)], plugins=[denier])
    await executor(ctx).call(
        ToolCall(id="c2", name="transfer", arguments={"amount": 5}), approved=True
    )
    assert results(ctx) == [("c2", "never", True)] and len(ran) == 1


@pytest.mark.parametrize("arguments", [{"amount": "five"}, {}, {"amount": 1, "extra": True}])
async def test_invalid_arguments_are_a_visible_error_and_the_tool_never_runs(
    make_context, arguments
):
    ran: list[Any] = []
    ctx = make_context(tools=[counting_tool(ran)])
    await executor(ctx).call(ToolCall(id="c1", name="transfer", arguments=arguments))
    ((_, text, is_error),) = results(ctx)
    assert is_error and "transfer" in text
    assert ran == []


class RawTool:
    """A hand-written Tool whose behaviour each test picks."""

    def __init__(self, behave: Any) -> None:
        self.behave = behave
        self.descriptor = ToolDescriptor(id="raw", description="raw", parameters={"type": "object"})

    async def call(self, args: dict[str, Any], ctx: Any) -> Any:
        return self.behave(ctx)


def _raise(exc: BaseException) -> Any:
    def behave(ctx: Any) -> Any:
        raise exc

    return behave


async def test_an_exception_from_a_tool_is_a_visible_error_result(make_context):
    ctx = make_context(tools=[RawTool(_raise(ValueError("disk full")))])
    await executor(ctx).call(ToolCall(id="c1", name="raw"))
    assert results(ctx) == [("c1", "Tool 'raw' failed: ValueError: disk full", True)]


@pytest.mark.parametrize(
    "behave, message",
    [
        (_raise(ToolError("fatal")), "fatal"),
        (lambda ctx: "a bare string", "must return a ToolOutput"),
    ],
)
async def test_tool_error_or_a_wrong_return_type_ends_the_run(make_context, behave, message):
    ctx = make_context(tools=[RawTool(behave)])
    with pytest.raises(End) as ended:
        await executor(ctx).call(ToolCall(id="c1", name="raw"))
    failure = ended.value.cause.failure
    assert (failure.kind, failure.tool_id, failure.call_id) == ("tool", "raw", "c1")
    assert message in failure.message
    assert results(ctx) == []


async def test_a_tools_commands_commit_with_its_result(make_context):
    def behave(ctx: Any) -> ToolOutput:
        return ToolOutput(content="ok", state=[Command.set("seen", ctx.call_id, scope=Scope.RUN)])

    ctx = make_context(tools=[RawTool(behave)])
    await executor(ctx).call(ToolCall(id="c9", name="raw"))
    assert results(ctx) == [("c9", "ok", False)]
    assert ctx.engine.store.get_value("seen", Scope.RUN) == "c9"
    ((producer, _command),) = ctx.engine.log[0].entries
    assert producer == "c9"


async def test_a_cancelled_run_records_no_result(make_context):
    ran: list[Any] = []
    ctx = make_context(tools=[counting_tool(ran)])
    ctx.cancel.cancel()
    with pytest.raises(End) as ended:
        await executor(ctx).call(ToolCall(id="c1", name="transfer", arguments={"amount": 1}))
    assert ended.value.cause.kind == "cancelled"
    assert results(ctx) == []


# -- arguments are coerced once, before the gates -----------------------------------


def seeing_plugins(make_plugin: Any, seen: list[tuple[str, Any]]) -> list[Any]:
    """A gate and an observer that record the arguments they were shown."""

    def gate(ctx: Any, call: ToolCall) -> Any:
        seen.append(("gate", call.arguments))
        return None

    async def observe(ctx: Any) -> Any:
        seen.append(("observer", ctx.tool_call.arguments))
        return None

    return [
        make_plugin("g", CapabilityBound(tool_gates=True), Contributions(tool_gates=[gate])),
        make_plugin(
            "o", CapabilityBound(tool_observers=True), Contributions(tool_observers=[observe])
        ),
    ]


@pytest.mark.parametrize("spelled", ["5000", 5000.0, " 5000 ", 5000])
async def test_gates_observers_and_the_tool_see_the_same_coerced_value(
    make_context, make_plugin, spelled
):
    ran: list[Any] = []
    seen: list[tuple[str, Any]] = []
    ctx = make_context(tools=[counting_tool(ran)], plugins=seeing_plugins(make_plugin, seen))
    await executor(ctx).call(ToolCall(id="c1", name="transfer", arguments={"amount": spelled}))
    assert seen == [("gate", {"amount": 5000}), ("observer", {"amount": 5000})]
    assert type(seen[0][1]["amount"]) is int
    assert ran == [{"amount": 5000}]


@pytest.mark.parametrize("bad", [{"amount": "lots"}, {}, {"amount": 1, "extra": 2}])
async def test_invalid_arguments_reach_no_gate_and_no_tool(make_context, make_plugin, bad):
    ran: list[Any] = []
    seen: list[tuple[str, Any]] = []
    ctx = make_context(tools=[counting_tool(ran)], plugins=seeing_plugins(make_plugin, seen))
    await executor(ctx).call(ToolCall(id="c1", name="transfer", arguments=bad))
    ((call_id, text, is_error),) = results(ctx)
    assert call_id == "c1" and is_error and "Invalid arguments for tool 'transfer'" in text
    assert seen == [] and ran == []


async def test_a_parked_call_keeps_the_coerced_arguments(make_context, make_plugin):
    ran: list[Any] = []
    asker = gate_plugin(
        make_plugin, "asker", lambda c: Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
    )
    ctx = make_context(tools=[counting_tool(ran)], plugins=[asker])
    await executor(ctx).call(ToolCall(id="c1", name="transfer", arguments={"amount": "7"}))
    assert ctx.parked[0].call.arguments == {"amount": 7} and ran == []


async def test_arguments_already_in_the_tools_form_keep_the_call_as_sent(make_context, make_plugin):
    ran: list[Any] = []
    shown: list[ToolCall] = []

    def gate(ctx: Any, call: ToolCall) -> Any:
        shown.append(call)
        return None

    plugin = make_plugin("g", CapabilityBound(tool_gates=True), Contributions(tool_gates=[gate]))
    ctx = make_context(tools=[counting_tool(ran)], plugins=[plugin])
    sent = ToolCall(id="c1", name="transfer", arguments={"amount": 5000})
    await executor(ctx).call(sent)
    assert shown == [sent] and shown[0] is sent  # no copy when coercion changed nothing
    assert ran == [{"amount": 5000}]


@pytest.mark.parametrize(
    ("sent", "coerced", "same"),
    [
        ({"a": 1, "b": "x"}, {"a": 1, "b": "x"}, True),
        ({"a": 1}, {"a": True}, False),  # 1 == True, but not the same argument
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"a": 1.0}, False),
        ({"a": [1]}, {"a": [1]}, False),  # containers: always the coerced copy
        ({"a": 1}, {"a": 1, "b": None}, False),  # a default filled in
        ({"a": None}, {"b": None}, False),
    ],
)
def test_coercion_counts_as_unchanged_only_for_equal_values_of_one_scalar_type(
    sent: dict[str, Any], coerced: dict[str, Any], same: bool
) -> None:
    from awaken_runtime.run._tool_calls import _unchanged

    assert _unchanged(sent, coerced) is same
