"""AgentEvent: the seven variants of a streamed run, ordering, JSON round trips, usage
and cost on RunFinish, and ``run_sync`` (SPEC 3.6, 3.9, 3.10)."""

from __future__ import annotations

import itertools
import json
import warnings

import pytest

from awaken_runtime import (
    AwaitReason,
    Command,
    Contributions,
    Error,
    HookReaction,
    ModelSpec,
    NaturalEnd,
    Phase,
    PhaseHookPoint,
    PluginFailure,
    Pricing,
    ResolutionError,
    RunFinish,
    RunStart,
    ScriptedTurn,
    StepEnd,
    StepStart,
    Suspend,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolCallDone,
    ToolCallReady,
    event_adapter,
    tool,
)

VARIANTS = {
    RunStart: "run_start",
    StepStart: "step_start",
    TextDelta: "text_delta",
    ToolCallReady: "tool_call_ready",
    ToolCallDone: "tool_call_done",
    StepEnd: "step_end",
    RunFinish: "run_finish",
}

PRICED = ModelSpec(
    id="test-model",
    provider="scripted",
    model="scripted-1",
    pricing=Pricing(input_per_mtok=3.0, output_per_mtok=15.0, cached_input_per_mtok=0.3),
)
USAGE_1 = TokenUsage(prompt_tokens=1000, completion_tokens=200)
USAGE_2 = TokenUsage(prompt_tokens=1500, completion_tokens=300, cached_tokens=500)
EXPECTED_COST = (1000 * 3.0 + 200 * 15.0 + 1000 * 3.0 + 500 * 0.3 + 300 * 15.0) / 1_000_000


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: first
        b: second
    """
    return a + b


def _turns():
    return [
        ScriptedTurn(
            reasoning="I should add them.",
            text="Let me add.",
            tool_calls=[ToolCall(id="call-1", name="add", arguments={"a": 1, "b": 2})],
            usage=USAGE_1,
        ),
        ScriptedTurn(reasoning="It is three.", text="The answer is 3.", usage=USAGE_2),
    ]


def _recorder(make_plugin):
    at = PhaseHookPoint.AFTER_TOOL

    async def hook(ctx):
        return HookReaction(commands=[Command.set("last_tool", ctx.tool_call.name)])

    return make_plugin(
        "recorder",
        {"phase_hooks": {at}, "state_keys": ["thread:last_tool"]},
        Contributions(phase_hooks={at: hook}),
    )


@pytest.fixture
def rig(make_runtime, make_plugin):
    return make_runtime(
        _turns(), tools=[add], plugins=[_recorder(make_plugin)], chunk_size=4, model=PRICED
    )


async def test_all_seven_variants_in_a_scripted_run(rig):
    events = await rig.events("what is 1+2?", thread_id="t")
    assert {type(e) for e in events} == set(VARIANTS)
    assert isinstance(events[0], RunStart) and isinstance(events[-1], RunFinish)
    assert [e.type for e in events] == [VARIANTS[type(e)] for e in events]
    assert len({e.run_id for e in events}) == 1
    start = events[0]
    assert (start.thread_id, start.agent_id) == ("t", "agent")


async def test_seq_strictly_increasing_from_one(rig):
    events = await rig.events()
    seqs = [e.seq for e in events]
    assert seqs[0] == 1
    assert all(b > a for a, b in itertools.pairwise(seqs))
    assert seqs == list(range(1, len(events) + 1))


async def test_event_order_and_content(rig):
    events = await rig.events("what is 1+2?")
    kinds = [type(e).__name__ for e in events if not isinstance(e, TextDelta)]
    assert kinds == [
        "RunStart",
        "StepStart",
        "ToolCallReady",
        "ToolCallDone",
        "StepEnd",
        "StepStart",
        "StepEnd",
        "RunFinish",
    ]
    # deltas per step: reasoning first, then text, each reassembling the turn
    steps: list[list[TextDelta]] = []
    for e in events:
        if isinstance(e, StepStart):
            steps.append([])
        elif isinstance(e, TextDelta):
            steps[-1].append(e)
    for deltas, turn in zip(steps, _turns(), strict=True):
        channels = [d.channel for d in deltas]
        assert channels == sorted(channels, key=["reasoning", "text"].index)
        assert "".join(d.delta for d in deltas if d.channel == "reasoning") == turn.reasoning
        assert "".join(d.delta for d in deltas if d.channel == "text") == turn.text
        assert all(len(d.delta) <= 4 for d in deltas)

    ready = next(e for e in events if isinstance(e, ToolCallReady))
    done = next(e for e in events if isinstance(e, ToolCallDone))
    assert (ready.call_id, ready.name, ready.arguments) == ("call-1", "add", {"a": 1, "b": 2})
    assert (done.call_id, done.output, done.outcome) == ("call-1", "3", "success")

    step_ends = [e for e in events if isinstance(e, StepEnd)]
    assert [e.step for e in step_ends] == [1, 2]
    assert [e.usage for e in step_ends] == [USAGE_1, USAGE_2]
    delta_keys = [c.key for c in step_ends[0].state_delta]
    assert "last_tool" in delta_keys
    assert "last_tool" not in [c.key for c in step_ends[1].state_delta]


async def test_run_finish_carries_usage_and_cost(rig):
    events = await rig.events()
    finish = events[-1]
    assert finish.phase == Phase.ENDED
    assert finish.end_cause == NaturalEnd()
    assert finish.final_text == "The answer is 3."
    assert finish.usage == USAGE_1 + USAGE_2
    assert finish.usage.total_tokens == 3000
    assert finish.cost == pytest.approx(EXPECTED_COST)
    assert finish.ticket is None and finish.tickets == []


async def test_run_state_matches_run_finish(rig):
    seen = []
    state = await rig.runtime.run("agent", "hi", on_event=seen.append)
    finish = seen[-1]
    assert isinstance(finish, RunFinish)
    assert state.usage == finish.usage
    assert state.cost == pytest.approx(finish.cost)
    assert state.final_text == finish.final_text
    assert state.end_cause == finish.end_cause


def _round_trip(events):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pydantic serializer warnings fail the test
        for event in events:
            raw = event.model_dump_json()
            data = json.loads(raw)
            assert data["type"] == VARIANTS[type(event)]
            assert data["seq"] == event.seq
            back = event_adapter.validate_json(raw)
            assert type(back) is type(event)
            assert back == event
            assert event_adapter.dump_python(back, mode="json") == data
            assert event_adapter.validate_python(data) == event


async def test_events_round_trip_through_json(rig):
    events = await rig.events()
    _round_trip(events)


async def test_waiting_run_finish_round_trips(make_runtime, make_plugin):
    def gate(ctx, call):
        return Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={"question": "ok?"})

    plugin = make_plugin("asker", {"tool_gates": True}, Contributions(tool_gates=[gate]))
    rig = make_runtime(_turns(), tools=[add], plugins=[plugin], model=PRICED)
    events = await rig.events(thread_id="t")
    finish = events[-1]
    assert finish.phase == Phase.WAITING
    assert finish.ticket is not None and finish.ticket.payload == {"question": "ok?"}
    assert [e.outcome for e in events if isinstance(e, ToolCallDone)] == ["suspended"]
    _round_trip(events)


async def test_failed_run_finish_round_trips(make_runtime, make_plugin):
    point = PhaseHookPoint.STEP_START

    async def boom(ctx):
        raise RuntimeError("no")

    plugin = make_plugin("boom", {"phase_hooks": {point}}, Contributions(phase_hooks={point: boom}))
    rig = make_runtime(_turns(), tools=[add], plugins=[plugin])
    events = await rig.events()
    finish = events[-1]
    assert isinstance(finish.end_cause, Error)
    assert isinstance(finish.end_cause.failure, PluginFailure)
    _round_trip(events)


async def test_stream_raises_resolution_errors(rig):
    with pytest.raises(ResolutionError):
        async for _event in rig.runtime.stream("nobody", "hi"):
            pass


def test_run_sync_outside_an_event_loop(rig):
    state = rig.runtime.run_sync("agent", "what is 1+2?", thread_id="sync")
    assert state.end_cause == NaturalEnd()
    assert state.final_text == "The answer is 3."
    assert state.cost == pytest.approx(EXPECTED_COST)
    assert [m.role for m in rig.messages("sync")] == ["user", "assistant", "tool", "assistant"]
