"""A plugin may start the next request later in the transcript (compaction's cut)."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_runtime import (
    CapabilityBound,
    CapabilityBoundFailure,
    Contributions,
    HookReaction,
    PhaseContext,
    PhaseHookPoint,
    ScriptedTurn,
    ToolCall,
    override_params,
    start_window_after,
    tool,
)

BI = PhaseHookPoint.BEFORE_INFERENCE


@tool
def look() -> str:
    """Look."""
    return "seen"


def cutter(make_plugin: Any, pick: Any, *, allowed: bool = True) -> Any:
    async def hook(ctx: PhaseContext) -> HookReaction | None:
        target = pick(list(ctx.messages))
        return HookReaction(commands=[start_window_after(target.id)]) if target else None

    return make_plugin(
        "cutter",
        CapabilityBound(phase_hooks={BI}, narrows_window=allowed),
        Contributions(phase_hooks={BI: hook}),
    )


def roles(request: Any) -> list[str]:
    return [m.role for m in request.messages]


async def test_request_starts_after_the_message_and_transcript_is_untouched(
    make_runtime, make_plugin
):
    history = ["first answer", "second answer"]
    rig = make_runtime(
        [*history, "third"],
        plugins=[cutter(make_plugin, lambda ms: ms[1] if len(ms) > 4 else None)],
    )
    for text in ("one", "two", "three"):
        await rig.run(text, thread_id="t")
    last = rig.executor.requests[-1]
    # Transcript: u a u a u -> the request starts after the first assistant answer.
    assert [m.text for m in last.messages if m.role != "system"] == [
        "two",
        "second answer",
        "three",
    ]
    assert len(rig.messages("t")) == 6


async def test_cut_never_separates_tool_results_from_their_call(make_runtime, make_plugin):
    turn = ScriptedTurn(tool_calls=[ToolCall(id="c1", name="look", arguments={})])

    def pick(ms: list[Any]) -> Any:
        # Ask to cut right after the assistant tool call: the result would lose its call.
        calls = [m for m in ms if m.tool_calls]
        return calls[-1] if calls and ms[-1].role == "tool" else None

    rig = make_runtime([turn, "done"], tools=[look], plugins=[cutter(make_plugin, pick)])
    await rig.run("go", thread_id="t")
    second = rig.executor.requests[1]
    assert roles(second)[-2:] == ["assistant", "tool"]


async def test_window_override_is_request_only(make_runtime, make_plugin):
    calls = {"n": 0}

    def pick(ms: list[Any]) -> Any:
        calls["n"] += 1
        return ms[0] if calls["n"] == 2 else None

    turn = ScriptedTurn(tool_calls=[ToolCall(id="c1", name="look", arguments={})])
    rig = make_runtime(
        [turn, turn.model_copy(update={"tool_calls": [ToolCall(id="c2", name="look")]}), "end"],
        tools=[look],
        plugins=[cutter(make_plugin, pick)],
    )
    await rig.run("go", thread_id="t")
    _first, second, third = rig.executor.requests
    assert "user" not in roles(second)  # cut after the user message for that one request
    assert roles(third)[1] == "user"  # the next request is whole again


async def test_narrowing_the_window_needs_the_bound(make_runtime, make_plugin):
    rig = make_runtime(["x"], plugins=[cutter(make_plugin, lambda ms: ms[0], allowed=False)])
    state = await rig.run("go")
    failure = state.end_cause.failure
    assert isinstance(failure, CapabilityBoundFailure) and failure.item == "narrows_window=True"


# --- per-request inference parameters ---------------------------------------------


def tuner(make_plugin: Any, allowed: set[str], **fields: Any) -> Any:
    async def hook(ctx: PhaseContext) -> HookReaction | None:
        return HookReaction(commands=[override_params(**fields)]) if ctx.run.step == 1 else None

    return make_plugin(
        f"tuner-{len(allowed)}-{len(fields)}",
        CapabilityBound(phase_hooks={BI}, inference_params=allowed),
        Contributions(phase_hooks={BI: hook}),
    )


async def test_plugins_override_params_for_one_request_last_writer_wins(make_runtime, make_plugin):
    first = tuner(make_plugin, {"temperature", "top_p"}, temperature=0.1, top_p=0.5)
    second = tuner(make_plugin, {"temperature"}, temperature=0.9)
    turn = ScriptedTurn(tool_calls=[ToolCall(id="c1", name="look", arguments={})])
    rig = make_runtime(
        [turn, "done"],
        tools=[look],
        plugins=[first, second],
        params={"temperature": 0.5, "max_output_tokens": 100},
    )
    await rig.run("go")
    tuned, plain = (r.params for r in rig.executor.requests)
    assert (tuned.temperature, tuned.top_p, tuned.max_output_tokens) == (0.9, 0.5, 100)
    assert (plain.temperature, plain.top_p) == (0.5, None)  # request-only


async def test_overriding_an_undeclared_param_fails_closed(make_runtime, make_plugin):
    plugin = tuner(make_plugin, {"top_p"}, temperature=0.0)
    state = await make_runtime(["x"], plugins=[plugin]).run("go")
    assert state.end_cause.failure.item == "inference_params {temperature}"


def test_unknown_param_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown inference parameter"):
        override_params(temprature=1)
