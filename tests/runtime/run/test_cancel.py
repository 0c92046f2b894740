"""Cancellation (issue #3, SPEC 3.6): a ``CancellationToken`` checked at every boundary
and observed by slow tools and streaming inference. Every cancelled run ends
``Cancelled``, keeps what earlier steps committed and drops the unfinished step; a
waiting run can be cancelled too.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CancellationToken,
    Cancelled,
    CapabilityBound,
    Contributions,
    InferenceResponse,
    InMemoryStore,
    Message,
    ModelSpec,
    NaturalEnd,
    Phase,
    PhaseHookPoint,
    PluginManifest,
    Respond,
    ResumeRejected,
    Runtime,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    StreamDelta,
    Suspend,
    TextDelta,
    ThreadBusy,
    TokenUsage,
    ToolCall,
    ToolCallContext,
    tool,
)

AGENT = "agent"
PROVIDER = "scripted"
THREAD = "t-cancel"
FAST = 3.0
"""Every cancelled run must return well within this many seconds (the slow awaits take 10)."""


# -- the test agent ----------------------------------------------------------------------


@dataclass
class Probe:
    """What the tools observed."""

    quick: list[str] = field(default_factory=list)
    slow_started: list[str] = field(default_factory=list)
    slow_cancelled: list[str] = field(default_factory=list)
    slow_finished: list[str] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    on_slow_start: Any = None
    on_quick: Any = None


def make_tools(probe: Probe) -> list[Any]:
    async def quick(n: int, ctx: ToolCallContext) -> str:
        """A fast tool."""
        probe.quick.append(ctx.call_id)
        if probe.on_quick is not None:
            probe.on_quick(ctx.call_id)
        return f"quick {n}"

    async def slow(ctx: ToolCallContext) -> str:
        """A tool that takes ten seconds."""
        probe.slow_started.append(ctx.call_id)
        probe.started.set()
        if probe.on_slow_start is not None:
            probe.on_slow_start()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            probe.slow_cancelled.append(ctx.call_id)
            raise
        probe.slow_finished.append(ctx.call_id)
        return "slow done"

    async def guarded(ctx: ToolCallContext) -> str:
        """A tool a gate always suspends."""
        probe.quick.append(ctx.call_id)
        return "guarded ran"

    return [tool(quick), tool(slow), tool(guarded)]


def suspend_guarded(call: ToolCall) -> bool:
    return call.name == "guarded"


def plugin(hooks: dict[PhaseHookPoint, Any], suspends: Callable[[ToolCall], bool]) -> Any:
    """A plugin with the given phase hooks and a gate suspending calls ``suspends`` picks."""

    class _Plugin:
        manifest = PluginManifest(
            id="probe",
            bound=CapabilityBound(tool_gates=True, phase_hooks=frozenset(hooks)),
        )

        def resolve(self, config: Any) -> Contributions:
            def gate(ctx: Any, call: ToolCall) -> Any:
                if suspends(call):
                    return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
                return None

            return Contributions(phase_hooks=dict(hooks), tool_gates=[gate])

    return _Plugin()


def call(cid: str, name: str, **args: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCall(id=cid, name=name, arguments=args)])


@dataclass
class Rig:
    runtime: Runtime
    store: InMemoryStore
    executor: Any
    probe: Probe


def build(
    turns: Sequence[Any] = (),
    *,
    hooks: dict[PhaseHookPoint, Any] | None = None,
    executor: Any = None,
    store: InMemoryStore | None = None,
    suspends: Callable[[ToolCall], bool] = suspend_guarded,
) -> Rig:
    probe = Probe()
    store = store or InMemoryStore()
    executor = executor or ScriptedExecutor(list(turns))
    tools = make_tools(probe)
    builder = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider=PROVIDER, model="scripted-1"))
        .with_provider(PROVIDER, executor)
        .with_plugin(plugin(hooks or {}, suspends))
        .with_store(store)
    )
    for t in tools:
        builder.with_tool(t)
    builder.with_agent_spec(
        AgentConfig(
            id=AGENT,
            model_binding="m",
            tool_ids=[t.descriptor.id for t in tools],
            plugin_ids=["probe"],
        )
    )
    return Rig(builder.build(), store, executor, probe)


def shape(messages: Sequence[Message]) -> list[tuple[str, str | None, str]]:
    """``(role, tool_call_id or first call id, text)`` per message."""
    out = []
    for m in messages:
        ident = m.tool_call_id
        if m.role == "assistant" and m.tool_calls:
            ident = ",".join(c.id for c in m.tool_calls)
        out.append((m.role, ident, m.text))
    return out


STEP_ONE = [
    ("user", None, "go"),
    ("assistant", "c1", ""),
    ("tool", "c1", "quick 1"),
]
"""What the first (finished) step commits in every cancellation scenario."""


def assert_every_call_answered_once(messages: Sequence[Message]) -> None:
    calls = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls or []]
    results = [m.tool_call_id for m in messages if m.role == "tool"]
    assert sorted(calls) == sorted(results), (calls, results)
    assert len(set(results)) == len(results)


async def assert_thread_reusable(rig: Rig, thread_id: str = THREAD) -> None:
    """The thread is not parked and a new run on it completes."""
    snap = await rig.store.load(ScopeBinding(thread_id, "default", "default"))
    assert snap.parked is None
    if isinstance(rig.executor, ScriptedExecutor):
        rig.executor.turns[rig.executor.calls :] = ["fresh answer"]
    state = await rig.runtime.run(AGENT, "next", thread_id=thread_id)
    assert state.phase is Phase.ENDED and isinstance(state.end_cause, NaturalEnd)
    assert_every_call_answered_once(rig.store.messages(thread_id))


def assert_cancelled(rig: Rig, state: Any) -> None:
    assert state.phase is Phase.ENDED
    assert isinstance(state.end_cause, Cancelled), state.end_cause
    record = rig.store.runs[state.run_id]
    assert record.phase is Phase.ENDED and isinstance(record.end_cause, Cancelled)


async def run_cancelled_from_task(rig: Rig, token: CancellationToken, ready: asyncio.Event) -> Any:
    """Start the run, cancel from this (another) task once ``ready`` is set."""
    started = time.monotonic()
    task = asyncio.create_task(rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token))
    await asyncio.wait_for(ready.wait(), FAST)
    token.cancel("user pressed stop")
    state = await asyncio.wait_for(task, FAST)
    assert time.monotonic() - started < FAST
    assert token.cancelled and token.reason == "user pressed stop"
    return state


# -- cancelling at boundaries -----------------------------------------------------------------


async def test_cancel_during_step_start_keeps_earlier_steps() -> None:
    token = CancellationToken()
    seen_steps: list[int] = []

    async def on_step_start(ctx: Any) -> None:
        seen_steps.append(ctx.run.step)
        if ctx.run.step == 2:
            token.cancel()

    rig = build(
        [call("c1", "quick", n=1), call("c2", "quick", n=2), "never"],
        hooks={PhaseHookPoint.STEP_START: on_step_start},
    )
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token)
    assert_cancelled(rig, state)
    assert seen_steps == [1, 2]
    assert rig.executor.calls == 1  # step 2 never reached inference
    assert rig.probe.quick == ["c1"]
    assert shape(rig.store.messages(THREAD)) == STEP_ONE
    assert state.final_text == ""
    await assert_thread_reusable(rig)


async def test_cancel_before_the_first_step_keeps_the_input() -> None:
    token = CancellationToken()
    token.cancel()
    rig = build(["never"])
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token)
    assert_cancelled(rig, state)
    assert rig.executor.calls == 0
    assert shape(rig.store.messages(THREAD)) == [("user", None, "go")]


async def test_cancel_during_step_end_keeps_that_step() -> None:
    token = CancellationToken()

    async def on_step_end(ctx: Any) -> None:
        if ctx.run.step == 2:
            token.cancel()

    rig = build(
        [call("c1", "quick", n=1), call("c2", "quick", n=2), "never"],
        hooks={PhaseHookPoint.STEP_END: on_step_end},
    )
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token)
    assert_cancelled(rig, state)
    assert rig.executor.calls == 2
    assert rig.probe.quick == ["c1", "c2"]
    # The step whose StepEnd cancelled is kept whole.
    assert shape(rig.store.messages(THREAD)) == [
        *STEP_ONE,
        ("assistant", "c2", ""),
        ("tool", "c2", "quick 2"),
    ]
    assert state.steps == 2
    await assert_thread_reusable(rig)


async def test_tool_cancelling_its_own_run_ends_at_the_next_boundary() -> None:
    """A tool that cancels its own run's token finishes; the run stops after it."""
    token = CancellationToken()
    rig = build([call("c1", "quick", n=1), call("c2", "quick", n=2), "never"])
    rig.probe.on_quick = lambda cid: token.cancel() if cid == "c2" else None
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token)
    assert_cancelled(rig, state)
    assert rig.probe.quick == ["c1", "c2"]
    assert rig.executor.calls == 2
    # The unfinished step 2 is dropped.
    assert shape(rig.store.messages(THREAD)) == STEP_ONE


# -- cancelling long awaits -----------------------------------------------------------------------


class SlowStreamExecutor:
    """Step 1 calls ``quick``; step 2 streams one delta and then hangs for ten seconds."""

    def __init__(self) -> None:
        self.calls = 0
        self.hung = False
        self.interrupted = False
        self.completed = False

    async def stream(self, request: Any) -> AsyncIterator[StreamDelta | InferenceResponse]:
        self.calls += 1
        if self.calls == 1:
            yield InferenceResponse(
                tool_calls=[ToolCall(id="c1", name="quick", arguments={"n": 1})],
                usage=TokenUsage(prompt_tokens=5, completion_tokens=1),
                finish_reason="tool_calls",
            )
            return
        if self.calls > 2:
            yield StreamDelta(text="fresh answer")
            yield InferenceResponse(text="fresh answer")
            return
        yield StreamDelta(text="partial ")
        self.hung = True
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            self.interrupted = True
            raise
        self.completed = True
        yield StreamDelta(text="never")
        yield InferenceResponse(text="partial never")


async def test_cancel_during_streaming_inference() -> None:
    executor = SlowStreamExecutor()
    rig = build(executor=executor)
    token = CancellationToken()
    first_delta = asyncio.Event()
    deltas: list[str] = []

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            deltas.append(event.delta)
            first_delta.set()

    started = time.monotonic()
    task = asyncio.create_task(
        rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token, on_event=on_event)
    )
    await asyncio.wait_for(first_delta.wait(), FAST)
    await asyncio.sleep(0.05)  # let the stream reach its long await
    assert executor.hung
    token.cancel()
    state = await asyncio.wait_for(task, FAST)
    assert time.monotonic() - started < FAST

    assert_cancelled(rig, state)
    assert executor.interrupted and not executor.completed
    assert deltas == ["partial "]
    # The partial answer of the unfinished step is not committed.
    assert shape(rig.store.messages(THREAD)) == STEP_ONE
    assert all("partial" not in m.text for m in rig.store.messages(THREAD))
    await assert_thread_reusable(rig)


async def test_cancel_during_a_slow_tool() -> None:
    rig = build([call("c1", "quick", n=1), call("c2", "slow"), "never"])
    token = CancellationToken()
    state = await run_cancelled_from_task(rig, token, rig.probe.started)

    assert_cancelled(rig, state)
    assert rig.probe.slow_started == ["c2"]
    assert rig.probe.slow_cancelled == ["c2"]
    assert rig.probe.slow_finished == []
    assert rig.executor.calls == 2
    # Step 1 kept; step 2 (the assistant's slow call) dropped, so no call is left open.
    assert shape(rig.store.messages(THREAD)) == STEP_ONE
    assert_every_call_answered_once(rig.store.messages(THREAD))
    await assert_thread_reusable(rig)


async def test_cancel_from_another_thread() -> None:
    rig = build([call("c1", "quick", n=1), call("c2", "slow"), "never"])
    token = CancellationToken()
    timers: list[threading.Timer] = []
    callers: list[int] = []

    def cancel_from_thread() -> None:
        callers.append(threading.get_ident())
        token.cancel("from a thread")

    def start_timer() -> None:
        timer = threading.Timer(0.05, cancel_from_thread)
        timers.append(timer)
        timer.start()

    rig.probe.on_slow_start = start_timer
    started = time.monotonic()
    state = await asyncio.wait_for(
        rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token), FAST
    )
    assert time.monotonic() - started < FAST
    for timer in timers:
        timer.join(1)

    assert callers and callers[0] != threading.get_ident()
    assert token.reason == "from a thread"
    assert_cancelled(rig, state)
    assert rig.probe.slow_cancelled == ["c2"] and rig.probe.slow_finished == []
    assert shape(rig.store.messages(THREAD)) == STEP_ONE
    await assert_thread_reusable(rig)


async def test_cancel_from_another_thread_during_streaming_inference() -> None:
    executor = SlowStreamExecutor()
    rig = build(executor=executor)
    token = CancellationToken()

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            threading.Timer(0.05, token.cancel).start()

    state = await asyncio.wait_for(
        rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token, on_event=on_event), FAST
    )
    assert_cancelled(rig, state)
    assert executor.interrupted and not executor.completed
    assert shape(rig.store.messages(THREAD)) == STEP_ONE


async def test_cancelling_a_finished_run_token_is_harmless() -> None:
    rig = build(["hello there"])
    token = CancellationToken()
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD, cancel=token)
    assert isinstance(state.end_cause, NaturalEnd)
    token.cancel()
    await asyncio.sleep(0.01)
    assert rig.store.runs[state.run_id].end_cause == NaturalEnd()


# -- cancelling while waiting ------------------------------------------------------------------


async def _parked(rig: Rig) -> Any:
    state = await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    assert state.phase is Phase.WAITING
    return state


PARK_TWO = [
    call("c1", "quick", n=1),
    ScriptedTurn(
        tool_calls=[
            ToolCall(id="g1", name="guarded", arguments={}),
            ToolCall(id="q2", name="quick", arguments={"n": 2}),
            ToolCall(id="g2", name="guarded", arguments={}),
        ]
    ),
]


async def test_cancel_waiting_run() -> None:
    rig = build([*PARK_TWO, "never"])
    waiting = await _parked(rig)
    assert [t.call.id for t in waiting.tickets] == ["g1", "g2"]
    assert rig.probe.quick == ["c1", "q2"]

    state = await rig.runtime.cancel_waiting(THREAD)
    assert_cancelled(rig, state)
    assert state.run_id == waiting.run_id and state.tickets == []
    assert rig.executor.calls == 2
    assert rig.probe.quick == ["c1", "q2"]  # the parked calls never ran

    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert shape(messages)[: len(STEP_ONE)] == STEP_ONE
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    assert results["q2"].text == "quick 2"
    for cid in ("g1", "g2"):
        assert results[cid].metadata.get("is_error") is True
        assert results[cid].name == "guarded"
        assert "cancelled" in results[cid].text
    # No run waits any more, so the old tickets and a second cancel are rejected ...
    for ticket in waiting.tickets:
        with pytest.raises(ResumeRejected):
            await rig.runtime.resume(ticket, Approve())
    with pytest.raises(ResumeRejected):
        await rig.runtime.cancel_waiting(THREAD)
    # ... and the thread accepts a new run.
    await assert_thread_reusable(rig)


async def test_cancel_waiting_after_a_partial_resume() -> None:
    rig = build([*PARK_TWO, "never"])
    waiting = await _parked(rig)
    t_g1, t_g2 = waiting.tickets
    mid = await rig.runtime.resume(t_g2, Respond(value="answered"))
    assert mid.phase is Phase.WAITING
    state = await rig.runtime.cancel_waiting(THREAD)
    assert_cancelled(rig, state)
    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    results = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
    assert results["g2"] == "answered"
    assert "cancelled" in results["g1"]
    with pytest.raises(ResumeRejected):
        await rig.runtime.resume(t_g1, Approve())
    await assert_thread_reusable(rig)


async def test_cancel_waiting_on_a_thread_without_a_waiting_run_rejected() -> None:
    rig = build(["hi"])
    with pytest.raises(ResumeRejected):
        await rig.runtime.cancel_waiting("t-none")
    await rig.runtime.run(AGENT, "go", thread_id=THREAD)
    before = rig.store.messages(THREAD)
    with pytest.raises(ResumeRejected):
        await rig.runtime.cancel_waiting(THREAD)
    assert rig.store.messages(THREAD) == before


async def test_thread_busy_until_the_waiting_run_is_cancelled() -> None:
    rig = build([*PARK_TWO, "never"])
    await _parked(rig)
    with pytest.raises(ThreadBusy):
        await rig.runtime.run(AGENT, "again", thread_id=THREAD)
    await rig.runtime.cancel_waiting(THREAD)
    await assert_thread_reusable(rig)


# -- cancelling a resumed leg -------------------------------------------------------------------


async def test_cancel_during_an_approved_slow_call_on_resume() -> None:
    """Approving a parked call whose tool hangs, then cancelling, closes every open call."""
    turns = [
        call("c1", "quick", n=1),
        ScriptedTurn(
            tool_calls=[
                ToolCall(id="g1", name="guarded", arguments={}),
                ToolCall(id="s1", name="slow", arguments={}),
            ]
        ),
        "never",
    ]
    # The gate suspends "guarded" and also "slow" here, so both park.
    rig = build(turns, suspends=lambda c: c.name in ("guarded", "slow"))
    waiting = await _parked(rig)
    t_g1, t_s1 = waiting.tickets
    token = CancellationToken()
    task = asyncio.create_task(
        rig.runtime.resume_many([(t_g1, Respond(value="fine")), (t_s1, Approve())], cancel=token)
    )
    await asyncio.wait_for(rig.probe.started.wait(), FAST)
    token.cancel()
    state = await asyncio.wait_for(task, FAST)

    assert_cancelled(rig, state)
    assert rig.probe.slow_cancelled == ["s1"] and rig.probe.slow_finished == []
    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    assert shape(messages)[: len(STEP_ONE)] == STEP_ONE
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    assert results["g1"].text == "fine"
    # The interrupted call gets a model-visible error result naming the cancellation.
    assert results["s1"].metadata.get("is_error") is True
    assert "cancelled" in results["s1"].text
    assert "slow done" not in results["s1"].text
    with pytest.raises(ResumeRejected):
        await rig.runtime.resume(t_s1, Approve())
    await assert_thread_reusable(rig)


async def test_cancelled_resume_leg_does_not_misreport_an_executed_call() -> None:
    """A call that ran in a resume leg keeps its result when a later call of the same
    leg is cancelled.

    Regression: at commit be543df ``AgentLoop._finish`` rolled back the whole
    uncommitted resume leg and ``_close_open_calls`` then told the model "The call
    was not executed" about the approved ``quick`` call, which had run.
    """
    turns = [
        call("c1", "quick", n=1),
        ScriptedTurn(
            tool_calls=[
                ToolCall(id="q9", name="quick", arguments={"n": 9}),
                ToolCall(id="s1", name="slow", arguments={}),
            ]
        ),
        "never",
    ]
    rig = build(turns, suspends=lambda c: c.id in ("q9", "s1"))
    waiting = await _parked(rig)
    t_q9, t_s1 = waiting.tickets
    token = CancellationToken()
    task = asyncio.create_task(
        rig.runtime.resume_many([(t_q9, Approve()), (t_s1, Approve())], cancel=token)
    )
    await asyncio.wait_for(rig.probe.started.wait(), FAST)
    token.cancel()
    state = await asyncio.wait_for(task, FAST)

    assert_cancelled(rig, state)
    assert "q9" in rig.probe.quick  # the approved quick call did run
    messages = rig.store.messages(THREAD)
    assert_every_call_answered_once(messages)
    results = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
    assert results["q9"] == "quick 9", results["q9"]
