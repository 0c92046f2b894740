"""ToolCallExecutor alone, over a hand-built ``RunDeps`` (``executor_rig``): no runtime, no loop.

What runs, what is blocked or parked, what is recorded, and what ``run_calls``
returns: each call's result, the parked calls, the held AFTER_TOOL messages.
"""

from __future__ import annotations

from typing import Any

import pytest
from executor_rig import Rig, fake_deps
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_runtime import (
    AwaitReason,
    Block,
    Command,
    HookReaction,
    Message,
    Scope,
    Suspend,
    SuspendCall,
    ToolCall,
    ToolDescriptor,
    ToolError,
    ToolOutput,
    tool,
)
from awaken_runtime.run._calls_outcome import CallsOutcome
from awaken_runtime.run._signals import End
from awaken_runtime.run._step import kept_calls


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


def gate(pid: str, decide: Any) -> tuple[str, Any]:
    def hook(ctx: Any, call: ToolCall) -> Any:
        return decide(call)

    return pid, hook


def transfer(cid: str, amount: Any = 5) -> ToolCall:
    return ToolCall(id=cid, name="transfer", arguments={"amount": amount})


ASK = Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={"q": 1})


@pytest.mark.parametrize("name", ["nope", "Transfer", "transfer ", ""])
async def test_unknown_tool_is_blocked_and_nothing_runs(name):
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran)))
    done = await rig.calls.run_calls([ToolCall(id="c1", name=name, arguments={"amount": 1})])
    ((call_id, text, is_error),) = rig.results()
    assert call_id == "c1" and is_error and "Unknown tool" in text and "transfer" in text
    assert ran == [] and [o for _, _, o in done.results] == ["blocked"] and done.parked == []


async def test_a_tool_hidden_at_this_step_is_blocked_and_never_runs():
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran)))
    rig.leg.visible = set()  # a filter hid every tool this step
    done = await rig.calls.run_calls([transfer("c1")])
    assert rig.results() == [("c1", "Tool 'transfer' is not available at this step.", True)]
    assert ran == [] and done.parked == []


async def test_block_beats_suspend_and_nothing_is_parked():
    ran: list[Any] = []
    deps = fake_deps(
        counting_tool(ran),
        gates=[gate("asker", lambda c: ASK), gate("denier", lambda c: Block(reason="no"))],
    )
    rig = Rig(deps)
    done = await rig.calls.run_calls([transfer("c1")])
    assert rig.results() == [("c1", "no", True)]
    assert ran == [] and done.parked == []
    assert [(c.id, out.content, o) for c, out, o in done.results] == [("c1", "no", "blocked")]


async def test_a_denied_call_never_runs_even_when_approved():
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran), gates=[gate("denier", lambda c: Block(reason="x"))]))
    done = CallsOutcome()
    await rig.calls.call(transfer("c1"), done, approved=True)
    assert rig.results() == [("c1", "x", True)] and ran == [] and done.parked == []


async def test_suspend_parks_the_call_without_running_it():
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran), gates=[gate("asker", lambda c: ASK)]))
    done = await rig.calls.run_calls([transfer("c1")])
    assert ran == [] and rig.results() == [] and done.results == []
    (parked,) = done.parked
    assert parked.call.id == "c1" and parked.reason is AwaitReason.TOOL_PERMISSION
    assert parked.payload == {"q": 1}


async def test_approval_lifts_a_suspend():
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran), gates=[gate("asker", lambda c: ASK)]))
    done = CallsOutcome()
    await rig.calls.call(transfer("c1"), done, approved=True)
    assert ran == [{"amount": 5}] and done.parked == []
    assert rig.results() == [("c1", "moved 5", False)]


def suspending_tool(ran: list[str]) -> Any:
    """A tool that runs (and counts) every call, and asks for input on ``"ask"``."""

    class Asking:
        descriptor = ToolDescriptor(id="step", description="d", parameters={"type": "object"})

        async def call(self, args: dict[str, Any], ctx: Any) -> ToolOutput:
            ran.append(ctx.call_id)
            if args.get("ask"):
                raise SuspendCall(AwaitReason.USER_INPUT, {"why": ctx.call_id})
            return ToolOutput.ok(f"did {ctx.call_id}")

    return Asking()


async def test_a_suspension_parks_only_its_call_and_the_others_run_once():
    ran: list[str] = []
    rig = Rig(fake_deps(suspending_tool(ran)))
    calls = [
        ToolCall(id="a", name="step"),
        ToolCall(id="b", name="step", arguments={"ask": True}),
        ToolCall(id="c", name="step"),
    ]
    done = await rig.calls.run_calls(calls)
    assert ran == ["a", "b", "c"]  # each call ran once, none twice
    assert [p.call.id for p in done.parked] == ["b"]
    assert done.parked[0].payload == {"why": "b"}
    assert [(c.id, o) for c, _, o in done.results] == [("a", "success"), ("c", "success")]
    assert rig.results() == [("a", "did a", False), ("c", "did c", False)]


async def test_repeated_call_ids_end_the_run_before_any_call_runs():
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran)))
    with pytest.raises(End) as ended:
        await rig.calls.run_calls([transfer("dup", 1), transfer("other", 2), transfer("dup", 3)])
    failure = ended.value.cause.failure
    assert (failure.kind, failure.call_id) == ("tool", "dup") and "repeats" in failure.message
    assert ran == [] and rig.results() == []


async def test_a_providers_repeated_ids_are_kept_apart_and_each_call_runs_once():
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran)))
    rig.leg.call_ids = {"old"}  # an id an earlier step of the thread used
    sent = [transfer("dup", 1), transfer("dup", 2), transfer("old", 3), transfer("", 4)]
    calls, renamed = kept_calls(rig.leg, sent)
    ids = [c.id for c in calls]
    assert len(set(ids)) == 4 and "old" not in ids and "" not in ids
    assert renamed is not None and set(renamed.values()) <= {"dup", "old", ""}
    done = await rig.calls.run_calls(calls)
    assert ran == [{"amount": 1}, {"amount": 2}, {"amount": 3}, {"amount": 4}]
    assert [c.id for c, _, _ in done.results] == ids


async def test_after_tool_messages_come_back_held_not_in_the_transcript():
    async def note(ctx: Any) -> HookReaction:
        return HookReaction(messages=[Message.user(f"after {ctx.tool_call.id}")])

    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran), after_tool=[("noter", note)]))
    done = await rig.calls.run_calls([transfer("c1"), transfer("c2")])
    assert [m.text for m in done.held] == ["after c1", "after c2"]
    roles = [m.role for m in rig.leg.transcript.view()]
    assert roles == ["tool", "tool"]  # the results stay contiguous; the loop appends the rest


@pytest.mark.parametrize("arguments", [{"amount": "five"}, {}, {"amount": 1, "extra": True}])
async def test_invalid_arguments_are_a_visible_error_and_the_tool_never_runs(arguments):
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran)))
    await rig.calls.run_calls([ToolCall(id="c1", name="transfer", arguments=arguments)])
    ((_, text, is_error),) = rig.results()
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


async def test_an_exception_from_a_tool_is_a_visible_error_result():
    rig = Rig(fake_deps(RawTool(_raise(ValueError("disk full")))))
    done = await rig.calls.run_calls([ToolCall(id="c1", name="raw")])
    assert rig.results() == [("c1", "Tool 'raw' failed: ValueError: disk full", True)]
    assert [o for _, _, o in done.results] == ["error"]


@pytest.mark.parametrize(
    "behave, message",
    [
        (_raise(ToolError("fatal")), "fatal"),
        (lambda ctx: "a bare string", "must return a ToolOutput"),
    ],
)
async def test_tool_error_or_a_wrong_return_type_ends_the_run(behave, message):
    rig = Rig(fake_deps(RawTool(behave)))
    with pytest.raises(End) as ended:
        await rig.calls.run_calls([ToolCall(id="c1", name="raw")])
    failure = ended.value.cause.failure
    assert (failure.kind, failure.tool_id, failure.call_id) == ("tool", "raw", "c1")
    assert message in failure.message
    assert rig.results() == []


async def test_a_tools_commands_commit_with_its_result():
    def behave(ctx: Any) -> ToolOutput:
        return ToolOutput(content="ok", state=[Command.set("seen", ctx.call_id, scope=Scope.RUN)])

    rig = Rig(fake_deps(RawTool(behave)))
    await rig.calls.run_calls([ToolCall(id="c9", name="raw")])
    assert rig.results() == [("c9", "ok", False)]
    assert rig.leg.engine.store.get_value("seen", Scope.RUN) == "c9"
    ((producer, _command),) = rig.leg.engine.log[0].entries
    assert producer == "c9"


async def test_a_cancelled_run_records_no_result():
    ran: list[Any] = []
    rig = Rig(fake_deps(counting_tool(ran)))
    rig.leg.cancel.cancel()
    with pytest.raises(End) as ended:
        await rig.calls.run_calls([transfer("c1", 1)])
    assert ended.value.cause.kind == "cancelled"
    assert rig.results() == []


# -- hostile mixes: every call is answered, parked or refused, and runs at most once ------

DECISIONS = st.sampled_from(["allow", "block", "suspend", "tool_suspends", "unknown"])


@settings(max_examples=60, deadline=None)
@given(st.lists(DECISIONS, min_size=1, max_size=6))
async def test_each_call_runs_at_most_once_and_only_if_allowed(plan: list[str]) -> None:
    ran: list[str] = []

    def decide(call: ToolCall) -> Any:
        how = call.arguments.get("how")
        return Block(reason="no") if how == "block" else ASK if how == "suspend" else None

    rig = Rig(fake_deps(suspending_tool(ran), gates=[gate("g", decide)]))
    calls = [
        ToolCall(
            id=f"c{i}",
            name="missing" if how == "unknown" else "step",
            arguments={"how": how, "ask": how == "tool_suspends"},
        )
        for i, how in enumerate(plan)
    ]
    done = await rig.calls.run_calls(calls)
    pairs = list(zip(calls, plan, strict=True))
    runnable = [c.id for c, how in pairs if how in ("allow", "tool_suspends")]
    assert ran == runnable  # in model order, each once; a refused call never runs
    parked = [p.call.id for p in done.parked]
    assert parked == [c.id for c, how in pairs if "suspend" in how]
    answered = [c.id for c, _, _ in done.results]
    assert answered == [c.id for c in calls if c.id not in parked]  # the rest, in order
    assert [r[0] for r in rig.results()] == answered  # the transcript holds those only
