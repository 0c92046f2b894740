"""Stop conditions: each fires at StepEnd with a reason naming its numbers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from awaken_runtime import (
    AgentConfigError,
    CancellationToken,
    CapabilityBound,
    Contributions,
    LoopDetection,
    PhaseContext,
    ScriptedTurn,
    StopConfig,
    Stopped,
    TokenUsage,
    ToolCall,
    tool,
)


@tool
def probe(n: int = 0) -> str:
    """Probe something."""
    return f"probed {n}"


@tool
def broken() -> str:
    """Always fails."""
    raise ValueError("nope")


def calls(name: str, args: list[dict[str, Any]], **turn: Any) -> list[ScriptedTurn]:
    return [
        ScriptedTurn(tool_calls=[ToolCall(id=f"c{i}", name=name, arguments=a)], **turn)
        for i, a in enumerate(args)
    ]


def stopped(state: Any) -> str:
    assert isinstance(state.end_cause, Stopped), state.end_cause
    return state.end_cause.reason


async def test_timeout(make_runtime, monkeypatch):
    import awaken_runtime.run._stop as stop_mod

    clock = iter([100.0, 100.5, 103.0, 200.0])  # start, step 1, step 2, spare
    monkeypatch.setattr(stop_mod, "_clock", lambda: next(clock))
    rig = make_runtime(
        [*calls("probe", [{}, {}, {}]), "done"], tools=[probe], stop=StopConfig(timeout_s=2)
    )
    reason = stopped(await rig.run())
    assert reason == "timeout: ran 3.00s, limit 2s"


async def test_token_budget(make_runtime):
    usage = TokenUsage(prompt_tokens=40, completion_tokens=10)
    rig = make_runtime(
        [*calls("probe", [{}] * 5, usage=usage), "done"],
        tools=[probe],
        stop=StopConfig(max_total_tokens=120),
    )
    state = await rig.run()
    assert stopped(state) == "token budget: used 150 tokens, limit 120"
    assert state.steps == 3


async def test_cost_budget(make_runtime):
    usage = TokenUsage(prompt_tokens=1_000_000, completion_tokens=0)  # $3 at the test price
    rig = make_runtime(
        [*calls("probe", [{}] * 5, usage=usage), "done"],
        tools=[probe],
        stop=StopConfig(max_cost_usd=5),
    )
    assert stopped(await rig.run()) == "cost budget: spent $6.000000, limit $5"


async def test_consecutive_tool_errors(make_runtime):
    turns = [*calls("broken", [{}] * 4), "done"]
    rig = make_runtime(turns, tools=[broken], stop=StopConfig(max_consecutive_tool_errors=3))
    state = await rig.run()
    assert stopped(state) == "consecutive tool errors: 3 in a row, limit 3"
    assert state.steps == 3


async def test_a_success_resets_the_error_streak(make_runtime):
    ok = ScriptedTurn(tool_calls=[ToolCall(id="ok", name="probe", arguments={})])
    turns = [*calls("broken", [{}, {}]), ok, *calls("broken", [{}, {}]), "done"]
    rig = make_runtime(turns, tools=[broken, probe], stop=StopConfig(max_consecutive_tool_errors=3))
    assert (await rig.run()).end_cause.kind == "natural_end"


async def test_stop_on_tool(make_runtime):
    rig = make_runtime(
        [*calls("probe", [{}]), "done"], tools=[probe], stop=StopConfig(stop_on_tools=["probe"])
    )
    assert stopped(await rig.run()) == "stop on tool: the model called 'probe'"


async def test_stop_on_text(make_runtime):
    turns = [*calls("probe", [{}], text="FINAL ANSWER: 42"), "done"]
    rig = make_runtime(turns, tools=[probe], stop=StopConfig(stop_on_text=r"FINAL ANSWER: \d+"))
    assert stopped(await rig.run()) == "text match: 'FINAL ANSWER: 42' matched /FINAL ANSWER: \\d+/"


async def test_loop_detection_fires_on_identical_calls(make_runtime):
    turns = [*calls("probe", [{"n": 1}] * 5), "done"]
    rig = make_runtime(
        turns, tools=[probe], stop=StopConfig(loop_detection=LoopDetection(repeats=3, window=5))
    )
    state = await rig.run()
    assert stopped(state) == (
        "loop detected: 'probe' called 3 times with the same arguments within the last 3 "
        "calls (limit 3)"
    )
    assert state.steps == 3


async def test_loop_detection_ignores_different_arguments(make_runtime):
    turns = [*calls("probe", [{"n": i} for i in range(6)]), "done"]
    rig = make_runtime(
        turns, tools=[probe], stop=StopConfig(loop_detection=LoopDetection(repeats=3, window=5))
    )
    assert (await rig.run()).end_cause.kind == "natural_end"


async def test_plugin_stop_condition(make_runtime, make_plugin):
    def enough(ctx: PhaseContext) -> str | None:
        return f"seen {ctx.run.step} steps" if ctx.run.step >= 2 else None

    plugin = make_plugin(
        "limiter", CapabilityBound(stop_conditions=True), Contributions(stop_conditions=[enough])
    )
    rig = make_runtime([*calls("probe", [{}] * 5), "done"], tools=[probe], plugins=[plugin])
    assert stopped(await rig.run()) == "limiter: seen 2 steps"


async def test_a_final_answer_matching_stop_on_text_ends_stopped(make_runtime):
    rig = make_runtime(["FINAL ANSWER: 1"], stop=StopConfig(stop_on_text="FINAL"))
    assert stopped(await rig.run()) == "text match: 'FINAL' matched /FINAL/"


async def test_a_final_answer_not_matching_stop_on_text_ends_naturally(make_runtime):
    rig = make_runtime(["all done"], stop=StopConfig(stop_on_text="FINAL"))
    state = await rig.run()
    assert state.end_cause.kind == "natural_end" and state.final_text == "all done"


async def test_a_plugin_stop_condition_applies_to_a_natural_end(make_runtime, make_plugin):
    def always(ctx: PhaseContext) -> str | None:
        return "enough"

    plugin = make_plugin(
        "limiter", CapabilityBound(stop_conditions=True), Contributions(stop_conditions=[always])
    )
    assert stopped(await make_runtime(["done"], plugins=[plugin]).run()) == "limiter: enough"


def test_bad_regex_is_a_config_error(agent_config):
    from awaken_runtime import AgentConfig

    with pytest.raises(AgentConfigError, match="stop_on_text"):
        AgentConfig.from_dict({"id": "a", "model_binding": "m", "stop": {"stop_on_text": "("}})
    assert agent_config(stop={"timeout_s": 5}).stop.timeout_s == 5


async def test_the_timeout_interrupts_a_long_tool_call(make_runtime):
    started: list[bool] = []

    @tool
    async def crawl() -> str:
        """Crawl for a very long time."""
        started.append(True)
        await asyncio.sleep(3600)
        return "never"

    rig = make_runtime(
        [ScriptedTurn.call("crawl"), "done"], tools=[crawl], stop=StopConfig(timeout_s=0.2)
    )
    # wait_for only keeps a broken build from hanging the suite; it is not the assertion.
    state = await asyncio.wait_for(rig.run(), 60)
    assert started == [True]
    assert stopped(state) == "timeout: ran 0.20s, limit 0.2s"
    assert state.steps == 1


async def test_a_user_cancel_is_still_cancelled_with_a_timeout_set(make_runtime):
    token = CancellationToken()

    @tool
    async def crawl() -> str:
        """Crawl, and have the user cancel the run meanwhile."""
        asyncio.get_running_loop().call_later(0.05, token.cancel)
        await asyncio.sleep(3600)
        return "never"

    rig = make_runtime(
        [ScriptedTurn.call("crawl"), "done"], tools=[crawl], stop=StopConfig(timeout_s=30)
    )
    state = await asyncio.wait_for(rig.run(cancel=token), 60)
    assert state.end_cause.kind == "cancelled"
