"""The agent loop: context injection, tool narrowing, gates, guards, stop conditions,
failures, hook concurrency and commits, multi-turn threads (SPEC 3.4-3.6)."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awaken_runtime import (
    CONTEXT_MESSAGES,
    TOOL_FILTER,
    AwaitReason,
    Band,
    Block,
    CapabilityBoundFailure,
    Command,
    Complete,
    ContextMessage,
    Contributions,
    Error,
    HookReaction,
    MaxSteps,
    MergePolicy,
    Message,
    NaturalEnd,
    Phase,
    PhaseHookPoint,
    PluginFailure,
    Schedule,
    Scope,
    ScriptedTurn,
    ShortCircuit,
    StateConflictFailure,
    Steer,
    Stopped,
    Suspend,
    ToolCall,
    ToolCallDone,
    ToolError,
    ToolFailure,
    ToolFilter,
    ToolOutput,
    inject,
    tool,
)
from awaken_runtime.testing import scripted_runtime

BI = PhaseHookPoint.BEFORE_INFERENCE
ALL_BANDS = set(Band)


# -- helpers ----------------------------------------------------------------------------


def _tools():
    """Three zero-argument tools that record their calls."""
    calls: list[str] = []

    def make(name):
        def fn() -> str:
            calls.append(name)
            return f"{name} ran"

        fn.__doc__ = f"The {name} tool."
        return tool(name=name)(fn)

    return [make("alpha"), make("beta"), make("gamma")], calls


def _injector(plugin_id, make_plugin, *messages, bands=ALL_BANDS, when=None):
    """A plugin that injects ``messages`` at every BEFORE_INFERENCE (or when ``when(ctx)``)."""

    async def hook(ctx):
        if when is not None and not when(ctx):
            return None
        return HookReaction(commands=[inject(*messages)])

    return make_plugin(
        plugin_id,
        {"phase_hooks": {BI}, "context_bands": bands},
        Contributions(phase_hooks={BI: hook}),
    )


def _narrower(plugin_id, make_plugin, flt, *, entry_id=None):
    async def hook(ctx):
        return HookReaction(commands=[flt.command(entry_id or plugin_id)])

    return make_plugin(
        plugin_id,
        {"phase_hooks": {BI}, "narrows_tools": True},
        Contributions(phase_hooks={BI: hook}),
    )


def _summary(request):
    """``(role, content)`` of every request message, context entries tagged by key."""
    out = []
    for m in request.messages:
        key = m.metadata.get("context_key")
        out.append((m.role, f"<{key}>" if key else m.text))
    return out


def _context_keys(request):
    return [m.metadata["context_key"] for m in request.messages if "context_key" in m.metadata]


def _tool_ids(request):
    return [t.id for t in request.tools]


def _failure(state):
    assert isinstance(state.end_cause, Error), state.end_cause
    return state.end_cause.failure


def _done_events(events):
    return [e for e in events if isinstance(e, ToolCallDone)]


# -- context messages -------------------------------------------------------------------


async def test_bands_are_placed_into_the_request(make_plugin, make_runtime):
    plugin = _injector(
        "ctx",
        make_plugin,
        ContextMessage(key="sys", band=Band.SYSTEM, content="SYSTEM NOTE"),
        ContextMessage(key="sess", band=Band.SESSION, content="session"),
        ContextMessage(key="conv", band=Band.CONVERSATION, content="conversation"),
        ContextMessage(key="suf", band=Band.SUFFIX, content="suffix"),
    )
    rig = make_runtime(["answer one", "answer two"], plugins=[plugin])
    await rig.run("first", thread_id="t")
    await rig.run("second", thread_id="t")

    first, second = rig.executor.requests
    assert _summary(first) == [
        ("system", "You are a test agent.\n\nSYSTEM NOTE"),
        ("system", "<sess>"),
        ("system", "<conv>"),
        ("user", "first"),
        ("system", "<suf>"),
    ]
    assert _summary(second) == [
        ("system", "You are a test agent.\n\nSYSTEM NOTE"),
        ("system", "<sess>"),
        ("user", "first"),
        ("assistant", "answer one"),
        ("system", "<conv>"),
        ("user", "second"),
        ("system", "<suf>"),
    ]


async def test_conversation_band_sits_before_newest_user_turn_mid_run(make_plugin, make_runtime):
    plugin = _injector(
        "ctx", make_plugin, ContextMessage(key="conv", band=Band.CONVERSATION, content="c")
    )
    tools, _ = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    await rig.run("go")
    assert [r for r, _ in _summary(rig.executor.requests[1])] == [
        "system",
        "system",  # the conversation entry
        "user",
        "assistant",
        "tool",
    ]
    assert _summary(rig.executor.requests[1])[1] == ("system", "<conv>")


async def test_context_without_instructions_still_gets_a_system_prompt(make_plugin, make_runtime):
    plugin = _injector("ctx", make_plugin, ContextMessage(key="s", band=Band.SYSTEM, content="S"))
    rig = make_runtime(["ok"], plugins=[plugin], instructions="")
    await rig.run("hi")
    assert _summary(rig.executor.requests[0]) == [("system", "S"), ("user", "hi")]


async def test_entries_ordered_by_band_priority_key(make_plugin, make_runtime):
    plugin = _injector(
        "ctx",
        make_plugin,
        ContextMessage(key="s-b", band=Band.SESSION, content="1"),
        ContextMessage(key="s-a", band=Band.SESSION, content="2"),
        ContextMessage(key="s-z", band=Band.SESSION, content="3", priority=-1),
        ContextMessage(key="s-c", band=Band.SESSION, content="4", priority=5),
        ContextMessage(key="x-first", band=Band.SUFFIX, content="5", priority=-100),
        ContextMessage(key="x-b", band=Band.SUFFIX, content="6", priority=1),
        ContextMessage(key="x-a", band=Band.SUFFIX, content="7", priority=1),
        ContextMessage(key="sys-2", band=Band.SYSTEM, content="TWO", priority=2),
        ContextMessage(key="sys-1", band=Band.SYSTEM, content="ONE", priority=1),
    )
    rig = make_runtime(["ok"], plugins=[plugin])
    await rig.run("hi")
    request = rig.executor.requests[0]
    assert _context_keys(request) == ["s-z", "s-a", "s-b", "s-c", "x-first", "x-a", "x-b"]
    assert request.messages[0].text == "You are a test agent.\n\nONE\n\nTWO"
    assert request.messages[-1].metadata["context_key"] == "x-b"


async def test_two_plugins_writing_one_context_key_is_a_bound_error(make_plugin, make_runtime):
    one = _injector(
        "one",
        make_plugin,
        ContextMessage(key="shared", band=Band.SESSION, content="from one"),
        ContextMessage(key="only-one", band=Band.SESSION, content="o"),
    )
    two = _injector(
        "two",
        make_plugin,
        ContextMessage(key="shared", band=Band.SESSION, content="from two"),
        ContextMessage(key="only-two", band=Band.SESSION, content="t"),
    )
    for order in ([one, two], [two, one]):
        rig = make_runtime(["ok"], plugins=order)
        state = await rig.run("hi")
        failure = state.end_cause.failure
        assert failure.kind == "capability_bound"
        assert "context key 'shared' is written by both 'one' and 'two'" in failure.message
        assert rig.executor.requests == []


async def test_cooldown_steps_over_several_steps(make_plugin, make_runtime):
    plugin = _injector(
        "ctx",
        make_plugin,
        ContextMessage(key="tip", band=Band.SUFFIX, content="TIP", cooldown_steps=2),
        ContextMessage(key="always", band=Band.SUFFIX, content="ALWAYS"),
    )
    tools, _ = _tools()
    turns = [ScriptedTurn.call("alpha") for _ in range(6)] + ["done"]
    rig = make_runtime(turns, tools=tools, plugins=[plugin])
    state = await rig.run("go")
    assert state.steps == 7
    with_tip = [r.step for r in rig.executor.requests if "tip" in _context_keys(r)]
    assert with_tip == [1, 4, 7]
    assert all("always" in _context_keys(r) for r in rig.executor.requests)


async def test_context_cleared_after_the_request(make_plugin, make_runtime):
    active = {"on": True}
    plugin = _injector(
        "ctx",
        make_plugin,
        ContextMessage(key="once", band=Band.SESSION, content="ONCE"),
        when=lambda ctx: active["on"] and ctx.run.step == 1,
    )
    tools, _ = _tools()
    rig = make_runtime(
        [ScriptedTurn.call("alpha"), "first done", "second done"], tools=tools, plugins=[plugin]
    )
    state = await rig.run("go", thread_id="t")
    first, second = rig.executor.requests
    assert _context_keys(first) == ["once"]
    assert _context_keys(second) == []
    assert state.value(CONTEXT_MESSAGES, Scope.RUN) is None

    active["on"] = False
    await rig.run("again", thread_id="t")
    assert _context_keys(rig.executor.requests[2]) == []


async def test_context_never_reaches_the_transcript(make_plugin, make_runtime):
    plugin = _injector(
        "ctx",
        make_plugin,
        *(
            ContextMessage(key=f"k-{band.value}", band=band, content=f"CTX-{band.value}")
            for band in Band
        ),
    )
    tools, _ = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go", thread_id="t")
    transcript = rig.messages("t")
    assert [m.role for m in transcript] == ["user", "assistant", "tool", "assistant"]
    for m in [*transcript, *state.new_messages]:
        assert "CTX-" not in m.text
        assert "context_key" not in m.metadata
    # context lives in RUN scope only: nothing of it was persisted
    persisted = [c.key for b in rig.store.batches("t") for _p, c in b.entries]
    assert CONTEXT_MESSAGES not in persisted


@pytest.mark.parametrize(
    "bands", [{Band.SYSTEM}, set()], ids=["other-band-declared", "no-bands-declared"]
)
async def test_injecting_into_undeclared_band_fails_closed(make_plugin, make_runtime, bands):
    plugin = _injector(
        "ctx",
        make_plugin,
        ContextMessage(key="ok", band=Band.SYSTEM, content="fine"),
        ContextMessage(key="loud", band=Band.SUFFIX, content="LOUD"),
        bands=bands,
    )
    rig = make_runtime(["never"], plugins=[plugin])
    state = await rig.run("hi", thread_id="t")
    failure = _failure(state)
    assert isinstance(failure, CapabilityBoundFailure)
    assert failure.plugin_id == "ctx"
    assert "suffix" in failure.item
    assert rig.executor.calls == 0
    assert state.value(CONTEXT_MESSAGES, Scope.RUN) is None


async def test_context_injected_after_inference_reaches_the_next_request(make_plugin, make_runtime):
    """A plugin reacting to a response may queue context for the next request.

    The runtime clears the previous request's context in the same AFTER_INFERENCE
    batch; that clear must not collide with the plugin's write."""
    ai = PhaseHookPoint.AFTER_INFERENCE

    async def before(ctx):
        note = ContextMessage(key="always", band=Band.SUFFIX, content="always")
        return HookReaction(commands=[inject(note)])

    async def after(ctx):
        if ctx.response.tool_calls:
            note = ContextMessage(key="r", band=Band.SUFFIX, content="reminder")
            return HookReaction(commands=[inject(note)])
        return None

    plugin = make_plugin(
        "reminder",
        {"phase_hooks": {BI, ai}, "context_bands": {Band.SUFFIX}},
        Contributions(phase_hooks={BI: before, ai: after}),
    )
    tools, _ = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go")
    assert state.end_cause == NaturalEnd(), state.end_cause
    assert _context_keys(rig.executor.requests[1]) == ["always", "r"]


# -- tool narrowing ---------------------------------------------------------------------


async def test_hidden_tool_absent_from_request(make_plugin, make_runtime):
    tools, _ = _tools()
    plugin = _narrower("hider", make_plugin, ToolFilter(hide=frozenset({"beta"})))
    rig = make_runtime(["ok"], tools=tools, plugins=[plugin])
    await rig.run()
    assert _tool_ids(rig.executor.requests[0]) == ["alpha", "gamma"]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (ToolFilter(only=frozenset({"alpha", "beta"})), ToolFilter(hide={"alpha"}), ["beta"]),
        (
            ToolFilter(only=frozenset({"alpha", "beta"})),
            ToolFilter(only=frozenset({"beta", "gamma"})),
            ["beta"],
        ),
        (ToolFilter(hide={"alpha"}), ToolFilter(hide={"gamma"}), ["beta"]),
        (ToolFilter(only=frozenset({"alpha"})), ToolFilter(only=frozenset({"gamma"})), []),
    ],
)
async def test_filters_of_two_plugins_intersect(make_plugin, make_runtime, first, second, expected):
    tools, _ = _tools()
    p1 = _narrower("one", make_plugin, first)
    p2 = _narrower("two", make_plugin, second)
    for order in ([p1, p2], [p2, p1]):
        rig = make_runtime(["ok"], tools=tools, plugins=order)
        await rig.run()
        assert _tool_ids(rig.executor.requests[0]) == expected


async def test_call_to_hidden_tool_is_blocked(make_plugin, make_runtime):
    tools, calls = _tools()
    plugin = _narrower("hider", make_plugin, ToolFilter(hide=frozenset({"beta"})))
    rig = make_runtime([ScriptedTurn.call("beta"), "done"], tools=tools, plugins=[plugin])
    events = await rig.events("go", thread_id="t")
    assert calls == []
    (done,) = _done_events(events)
    assert done.outcome == "blocked"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.metadata.get("is_error") is True
    assert "beta" in tool_msg.text
    assert events[-1].end_cause == NaturalEnd()


async def test_filter_applies_to_its_own_request_only(make_plugin, make_runtime):
    tools, calls = _tools()
    hide = {"on": True}

    async def narrow(ctx):
        if hide["on"] and ctx.run.step == 1:
            return HookReaction(commands=[ToolFilter(hide={"beta"}).command("hider")])
        return None

    plugin = make_plugin(
        "hider",
        {"phase_hooks": {BI}, "narrows_tools": True},
        Contributions(phase_hooks={BI: narrow}),
    )
    rig = make_runtime(
        [ScriptedTurn.call("alpha"), ScriptedTurn.call("beta"), "done"],
        tools=tools,
        plugins=[plugin],
    )
    state = await rig.run("go")
    assert _tool_ids(rig.executor.requests[0]) == ["alpha", "gamma"]
    assert _tool_ids(rig.executor.requests[1]) == ["alpha", "beta", "gamma"]
    assert calls == ["alpha", "beta"]
    assert state.value(TOOL_FILTER, Scope.RUN) is None


async def test_nothing_can_add_a_tool_the_agent_lacks(make_plugin, make_runtime):
    tools, calls = _tools()
    narrow = _narrower("widen", make_plugin, ToolFilter(only=frozenset({"alpha", "ghost"})))

    def permissive_gate(ctx, call):
        return ShortCircuit(output=ToolOutput.ok("granted!"))

    gate = make_plugin("granter", {"tool_gates": True}, Contributions(tool_gates=[permissive_gate]))
    rig = make_runtime(
        [ScriptedTurn.call("ghost"), ScriptedTurn.call("beta"), "done"],
        tools=tools,
        plugins=[narrow, gate],
    )
    events = await rig.events("go", thread_id="t")
    assert _tool_ids(rig.executor.requests[0]) == ["alpha"]
    assert [d.outcome for d in _done_events(events)] == ["blocked", "blocked"]
    assert "granted!" not in [m.text for m in rig.messages("t")]
    assert calls == []


async def test_filter_entry_for_another_plugin_is_a_bound_failure(make_plugin, make_runtime):
    tools, _ = _tools()
    plugin = _narrower("sly", make_plugin, ToolFilter(hide={"beta"}), entry_id="someone-else")
    rig = make_runtime(["never"], tools=tools, plugins=[plugin])
    state = await rig.run()
    failure = _failure(state)
    assert isinstance(failure, CapabilityBoundFailure) and failure.plugin_id == "sly"


async def test_narrowing_without_bound_flag_is_a_bound_failure(make_plugin, make_runtime):
    tools, _ = _tools()

    async def hook(ctx):
        return HookReaction(commands=[ToolFilter(hide={"beta"}).command("plain")])

    plugin = make_plugin("plain", {"phase_hooks": {BI}}, Contributions(phase_hooks={BI: hook}))
    rig = make_runtime(["never"], tools=tools, plugins=[plugin])
    state = await rig.run()
    failure = _failure(state)
    assert isinstance(failure, CapabilityBoundFailure) and "narrows_tools" in failure.item


# -- gates ------------------------------------------------------------------------------

LATER = datetime(2030, 1, 1, tzinfo=UTC)
DECISIONS = {
    "none": None,
    "block": Block(reason="nope"),
    "suspend": Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={"ask": "ok?"}),
    "short": ShortCircuit(output=ToolOutput.ok("cached answer")),
    "schedule": Schedule(at=LATER),
}
OUTCOME = {
    "none": "success",
    "block": "blocked",
    "suspend": "suspended",
    "short": "short_circuit",
    "schedule": "suspended",
}
RANK = {"none": 0, "schedule": 1, "short": 2, "suspend": 3, "block": 4}


def _gate_plugins(make_plugin, names):
    plugins = []
    for i, name in enumerate(names):
        decision = DECISIONS[name]

        def gate(ctx, call, decision=decision):
            return decision

        plugins.append(
            make_plugin(f"gate-{i}", {"tool_gates": True}, Contributions(tool_gates=[gate]))
        )
    return plugins


async def _gated_run(make_plugin, make_runtime, names):
    tools, calls = _tools()
    rig = make_runtime(
        [ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=_gate_plugins(make_plugin, names)
    )
    events = await rig.events("go", thread_id="t")
    return rig, events, calls


@pytest.mark.parametrize(
    ("names", "winner"),
    [
        (("short", "block"), "block"),
        (("block", "short"), "block"),
        (("short", "suspend"), "suspend"),
        (("schedule", "short"), "short"),
        (("suspend", "schedule"), "suspend"),
        (("none", "short"), "short"),
        (("none", "none"), "none"),
        (("schedule", "short", "suspend", "block"), "block"),
    ],
)
async def test_gate_priority(make_plugin, make_runtime, names, winner):
    _rig, events, calls = await _gated_run(make_plugin, make_runtime, names)
    (done,) = _done_events(events)
    assert done.outcome == OUTCOME[winner]
    assert calls == (["alpha"] if winner == "none" else [])
    finish = events[-1]
    if winner in ("suspend", "schedule"):
        assert finish.phase == Phase.WAITING
        (ticket,) = finish.tickets
        assert ticket.call.name == "alpha"
        expected = {
            "suspend": AwaitReason.TOOL_PERMISSION,
            "schedule": AwaitReason.SCHEDULED_ACTION,
        }
        assert ticket.await_reason == expected[winner]
    else:
        assert finish.end_cause == NaturalEnd()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(sorted(DECISIONS)), min_size=1, max_size=4))
def test_gate_priority_any_combination(make_plugin, make_runtime, names):
    winner = max(names, key=RANK.__getitem__)
    _rig, events, _calls = asyncio.run(_gated_run(make_plugin, make_runtime, names))
    (done,) = _done_events(events)
    assert done.outcome == OUTCOME[winner]


async def test_short_circuit_output_is_the_result(make_plugin, make_runtime):
    rig, events, calls = await _gated_run(make_plugin, make_runtime, ("short",))
    assert calls == []
    (done,) = _done_events(events)
    assert done.output == "cached answer"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.text == "cached answer"
    assert not tool_msg.metadata.get("is_error")
    assert ("tool", "cached answer") in _summary(rig.executor.requests[1])


async def test_blocked_call_shows_reason_to_model(make_plugin, make_runtime):
    rig, _events, calls = await _gated_run(make_plugin, make_runtime, ("short", "block"))
    assert calls == []
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.text == "nope" and tool_msg.metadata.get("is_error") is True


# -- run-end guards ---------------------------------------------------------------------


async def test_guard_steer_takes_another_step_then_complete_ends(make_plugin, make_runtime):
    seen = []

    def guard(ctx):
        seen.append(ctx.run.step)
        return Steer(message="Please double-check.") if len(seen) == 1 else Complete()

    plugin = make_plugin("checker", {"run_end_guards": True}, Contributions(run_end_guards=[guard]))
    rig = make_runtime(["first answer", "second answer"], plugins=[plugin])
    state = await rig.run("question", thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert state.final_text == "second answer"
    assert seen == [1, 2]
    assert [(m.role, m.text) for m in rig.messages("t")] == [
        ("user", "question"),
        ("assistant", "first answer"),
        ("user", "Please double-check."),
        ("assistant", "second answer"),
    ]
    assert _summary(rig.executor.requests[1])[-1] == ("user", "Please double-check.")


async def test_first_steering_guard_wins(make_plugin, make_runtime):
    async def complete(ctx):
        return Complete()

    def steer_a(ctx):
        return Steer(message="A") if ctx.run.step == 1 else None

    def steer_b(ctx):
        return Steer(message="B") if ctx.run.step == 1 else None

    plugins = [
        make_plugin(pid, {"run_end_guards": True}, Contributions(run_end_guards=[g]))
        for pid, g in (("c", complete), ("a", steer_a), ("b", steer_b))
    ]
    rig = make_runtime(["one", "two"], plugins=plugins)
    await rig.run("q", thread_id="t")
    assert [m.text for m in rig.messages("t") if m.role == "user"] == ["q", "A"]


# -- stop conditions and failures --------------------------------------------------------


async def test_max_steps(make_runtime):
    tools, calls = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha")], repeat=True, tools=tools, max_steps=3)
    state = await rig.run("loop forever")
    assert state.end_cause == MaxSteps(max_steps=3)
    assert state.steps == 3 and rig.executor.calls == 3 and len(calls) == 3


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: first
        b: second
    """
    return a + b


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (ToolCall(id="c1", name="add", arguments={"a": "x", "b": 2}), "field 'a'"),
        (ToolCall(id="c1", name="add", arguments={"a": 1}), "field 'b'"),
        (ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2, "c": 3}), "field 'c'"),
        (ToolCall(id="c1", name="add", parse_error="arguments are not valid JSON"), "not valid"),
    ],
)
async def test_invalid_tool_args_are_a_model_visible_error(make_runtime, call, needle):
    rig = make_runtime([ScriptedTurn(tool_calls=[call]), "sorry"], tools=[add])
    events = await rig.events("add", thread_id="t")
    (done,) = _done_events(events)
    assert done.outcome == "error"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.metadata.get("is_error") is True
    assert needle in tool_msg.text and "add" in tool_msg.text
    assert events[-1].end_cause == NaturalEnd()
    assert rig.executor.calls == 2


async def test_tool_raising_generic_exception_is_an_error_result(make_runtime):
    @tool
    def explode() -> str:
        """Always fails."""
        raise ValueError("kaput")

    rig = make_runtime([ScriptedTurn.call("explode"), "recovered"], tools=[explode])
    state = await rig.run("go", thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert state.final_text == "recovered"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.metadata.get("is_error") is True
    assert "kaput" in tool_msg.text and "Traceback" not in tool_msg.text


async def test_tool_error_ends_the_run(make_runtime):
    @tool
    def hard_fail() -> str:
        """Fails hard."""
        raise ToolError("disk on fire")

    turn = ScriptedTurn.call("hard_fail")
    rig = make_runtime([turn, "never"], tools=[hard_fail])
    state = await rig.run("go")
    failure = _failure(state)
    assert isinstance(failure, ToolFailure)
    assert failure.tool_id == "hard_fail"
    assert failure.call_id == turn.tool_calls[0].id
    assert "disk on fire" in failure.message
    assert rig.executor.calls == 1


HOOK_POINTS = list(PhaseHookPoint)


@pytest.mark.parametrize("point", HOOK_POINTS, ids=[p.name for p in HOOK_POINTS])
async def test_raising_hook_is_a_plugin_failure(make_plugin, make_runtime, point):
    async def boom(ctx):
        raise RuntimeError(f"hook broke at {ctx.point}")

    plugin = make_plugin(
        "fragile", {"phase_hooks": {point}}, Contributions(phase_hooks={point: boom})
    )
    tools, _ = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go")
    failure = _failure(state)
    assert isinstance(failure, PluginFailure)
    assert failure.plugin_id == "fragile"
    assert failure.hook == point.name
    assert "RuntimeError" in failure.message and "hook broke" in failure.message


@pytest.mark.parametrize("kind", ["tool_gates", "run_end_guards", "tool_observers"])
async def test_raising_gate_guard_observer_is_a_plugin_failure(make_plugin, make_runtime, kind):
    def boom(*args):
        raise RuntimeError("nope")

    plugin = make_plugin("fragile", {kind: True}, Contributions(**{kind: [boom]}))
    tools, _ = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go")
    failure = _failure(state)
    assert isinstance(failure, PluginFailure) and failure.plugin_id == "fragile"
    assert "RuntimeError: nope" in failure.message


@pytest.mark.parametrize(
    ("point", "inferences"),
    [
        (PhaseHookPoint.RUN_START, 0),
        (PhaseHookPoint.STEP_START, 0),
        (PhaseHookPoint.BEFORE_INFERENCE, 0),
        (PhaseHookPoint.AFTER_TOOL, 1),
        (PhaseHookPoint.STEP_END, 1),
    ],
)
async def test_hook_stop_ends_with_stopped(make_plugin, make_runtime, point, inferences):
    async def stop(ctx):
        return HookReaction(stop="budget exhausted")

    plugin = make_plugin(
        "budget", {"phase_hooks": {point}}, Contributions(phase_hooks={point: stop})
    )
    tools, _ = _tools()
    rig = make_runtime(
        [ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin], max_steps=5
    )
    state = await rig.run("go")
    assert isinstance(state.end_cause, Stopped)
    assert "budget exhausted" in state.end_cause.reason and "budget" in state.end_cause.reason
    assert rig.executor.calls == inferences


async def test_after_tool_messages_reach_the_transcript(make_plugin, make_runtime):
    at = PhaseHookPoint.AFTER_TOOL

    async def note(ctx):
        return HookReaction(messages=[Message.system(f"note about {ctx.tool_call.name}")])

    plugin = make_plugin("noter", {"phase_hooks": {at}}, Contributions(phase_hooks={at: note}))
    tools, _ = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go", thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert [(m.role, m.text) for m in rig.messages("t")] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "alpha ran"),
        ("system", "note about alpha"),
        ("assistant", "done"),
    ]
    assert ("system", "note about alpha") in _summary(rig.executor.requests[1])


async def test_after_tool_messages_keep_tool_results_contiguous(make_plugin, make_runtime):
    """Chat APIs require every tool result to follow its assistant message directly;
    a hook's message must not land between two results of one response."""
    at = PhaseHookPoint.AFTER_TOOL

    async def note(ctx):
        return HookReaction(messages=[Message.system(f"note about {ctx.tool_call.name}")])

    plugin = make_plugin("noter", {"phase_hooks": {at}}, Contributions(phase_hooks={at: note}))
    tools, _ = _tools()
    both = ScriptedTurn(
        tool_calls=[ToolCall(id="c1", name="alpha"), ToolCall(id="c2", name="beta")]
    )
    rig = make_runtime([both, "done"], tools=tools, plugins=[plugin])
    await rig.run("go", thread_id="t")
    roles = [m.role for m in rig.messages("t")]
    assert roles[:4] == ["user", "assistant", "tool", "tool"], roles


@pytest.mark.parametrize(
    "point",
    [
        PhaseHookPoint.BEFORE_INFERENCE,
        PhaseHookPoint.STEP_START,
        PhaseHookPoint.AFTER_INFERENCE,
        PhaseHookPoint.STEP_END,
    ],
    ids=lambda p: p.name,
)
async def test_messages_from_other_hooks_are_a_plugin_failure(make_plugin, make_runtime, point):
    async def chatty(ctx):
        return HookReaction(messages=[Message.system("sneaky")])

    plugin = make_plugin(
        "chatty", {"phase_hooks": {point}}, Contributions(phase_hooks={point: chatty})
    )
    rig = make_runtime(["answer", "answer"], plugins=[plugin])
    state = await rig.run("go", thread_id="t")
    failure = _failure(state)
    assert isinstance(failure, PluginFailure) and failure.plugin_id == "chatty"
    assert "AFTER_TOOL" in failure.message
    assert all(m.text != "sneaky" for m in rig.messages("t"))


async def test_plugin_failure_names_hook_point_the_same_way(make_plugin, make_runtime):
    """A raising hook and a hook returning forbidden messages at the same point
    should report the same ``PluginFailure.hook`` name."""

    async def boom(ctx):
        raise RuntimeError("x")

    async def chatty(ctx):
        return HookReaction(messages=[Message.system("sneaky")])

    hooks = []
    for fn in (boom, chatty):
        plugin = make_plugin("p", {"phase_hooks": {BI}}, Contributions(phase_hooks={BI: fn}))
        rig = make_runtime(["answer"], plugins=[plugin])
        hooks.append(_failure(await rig.run("go")).hook)
    assert hooks[0] == hooks[1], hooks


# -- hook concurrency, commits, conflicts ------------------------------------------------


async def test_hooks_of_one_point_run_concurrently_on_one_snapshot(make_plugin, make_runtime):
    point = PhaseHookPoint.STEP_START
    arrived = {"one": asyncio.Event(), "two": asyncio.Event()}
    seen: dict[str, list] = {"one": [], "two": []}

    def make_hook(me, other):
        async def hook(ctx):
            seen[me].append(ctx.store.get_value("votes"))
            arrived[me].set()
            # deadlocks (and times out) unless both hooks are in flight together
            await asyncio.wait_for(arrived[other].wait(), timeout=5)
            return HookReaction(
                commands=[Command.set("votes", {me: ctx.run.step}, merge=MergePolicy.COMMUTATIVE)]
            )

        return hook

    plugins = [
        make_plugin(
            me,
            {"phase_hooks": {point}, "state_keys": ["thread:votes"]},
            Contributions(phase_hooks={point: make_hook(me, other)}),
        )
        for me, other in (("one", "two"), ("two", "one"))
    ]
    tools, _ = _tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=plugins)
    state = await rig.run("go", thread_id="t")
    assert state.end_cause == NaturalEnd(), state.end_cause
    # both hooks saw the pre-phase value, step after step
    assert seen["one"] == seen["two"] == [None, {"one": 1, "two": 1}]
    assert state.value("votes") == {"one": 2, "two": 2}
    # one commit per phase, holding both hooks' commands
    step_start = [b for b in state.log if b.phase == "step_start"]
    assert len(step_start) == 2
    for batch in step_start:
        assert sorted(p for p, _c in batch.entries) == ["one", "two"]


def _tally_plugins(make_plugin, ids):
    point = PhaseHookPoint.STEP_END

    def make_hook(pid, n):
        async def hook(ctx):
            current = ctx.store.get_value("tally") or {}
            return HookReaction(
                commands=[
                    Command.set(
                        "tally", {pid: current.get(pid, 0) + n}, merge=MergePolicy.COMMUTATIVE
                    ),
                    Command.set("own-" + pid, n),
                ]
            )

        return hook

    return {
        pid: make_plugin(
            pid,
            {"phase_hooks": {point}, "state_keys": ["thread:tally", f"thread:own-{pid}"]},
            Contributions(phase_hooks={point: make_hook(pid, i + 1)}),
        )
        for i, pid in enumerate(ids)
    }


async def test_commutative_writes_are_order_independent(make_plugin, make_runtime):
    ids = ["pa", "pb", "pc"]
    plugins = _tally_plugins(make_plugin, ids)
    tools, _ = _tools()
    results = []
    for order in itertools.permutations(ids):
        rig = make_runtime(
            [ScriptedTurn.call("alpha"), "done"],
            tools=tools,
            plugins=[plugins[p] for p in order],
        )
        await rig.run("go", thread_id="t")
        results.append(rig.store.thread_state("t"))
    assert all(r == results[0] for r in results)
    assert results[0][(Scope.THREAD, "tally")] == {"pa": 2, "pb": 4, "pc": 6}


async def test_exclusive_conflict_names_both_plugins(make_plugin, make_runtime):
    point = PhaseHookPoint.STEP_START

    def make_hook(pid):
        async def hook(ctx):
            return HookReaction(
                commands=[
                    Command.set("lock", pid, merge=MergePolicy.EXCLUSIVE),
                    Command.set(f"mine-{pid}", True),
                ]
            )

        return hook

    plugins = [
        make_plugin(
            pid,
            {"phase_hooks": {point}, "state_keys": ["thread:lock", f"thread:mine-{pid}"]},
            Contributions(phase_hooks={point: make_hook(pid)}),
        )
        for pid in ("left", "right")
    ]
    rig = make_runtime(["never"], plugins=plugins)
    state = await rig.run("go", thread_id="t")
    failure = _failure(state)
    assert isinstance(failure, StateConflictFailure)
    assert failure.key == "lock"
    assert set(failure.producers) == {"left", "right"}
    assert "left" in failure.message and "right" in failure.message
    assert rig.executor.calls == 0
    for key in ("lock", "mine-left", "mine-right"):
        assert state.value(key) is None
    assert rig.store.thread_state("t") == {}


# -- multi-turn threads --------------------------------------------------------------------


def _visit_plugin(make_plugin, seen):
    point = PhaseHookPoint.RUN_START

    async def hook(ctx):
        visits = ctx.store.get_value("visits") or 0
        name = ctx.store.get_value("name", Scope.PROFILE)
        seen.append((ctx.run.thread_id, ctx.run.profile_id, visits, name))
        commands = [Command.set("visits", visits + 1)]
        if name is None:
            commands.append(Command.set("name", f"user-{ctx.run.profile_id}", scope=Scope.PROFILE))
        return HookReaction(commands=commands)

    return make_plugin(
        "visits",
        {"phase_hooks": {point}, "state_keys": ["thread:visits", "profile:name"]},
        Contributions(phase_hooks={point: hook}),
    )


async def test_second_run_sees_first_runs_messages_and_thread_state(make_plugin, make_runtime):
    seen: list = []
    rig = make_runtime(["one", "two"], plugins=[_visit_plugin(make_plugin, seen)])
    first = await rig.run("hello", thread_id="t")
    second = await rig.run("again", thread_id="t")
    assert [v for _t, _p, v, _n in seen] == [0, 1]
    assert second.value("visits") == 2
    assert _summary(rig.executor.requests[1]) == [
        ("system", "You are a test agent."),
        ("user", "hello"),
        ("assistant", "one"),
        ("user", "again"),
    ]
    assert [m.text for m in first.new_messages] == ["hello", "one"]
    assert [m.text for m in second.new_messages] == ["again", "two"]
    assert [m.text for m in rig.messages("t")] == ["hello", "one", "again", "two"]


async def test_profile_state_is_shared_across_threads(make_plugin, make_runtime):
    seen: list = []
    rig = make_runtime(["a", "b", "c", "d"], plugins=[_visit_plugin(make_plugin, seen)])
    await rig.run("hi", thread_id="t1", profile_id="alice")
    await rig.run("hi", thread_id="t2", profile_id="alice")
    await rig.run("hi", thread_id="t3", profile_id="bob")
    await rig.run("hi", thread_id="t1", profile_id="bob")
    assert seen == [
        ("t1", "alice", 0, None),
        ("t2", "alice", 0, "user-alice"),
        ("t3", "bob", 0, None),
        ("t1", "bob", 1, "user-bob"),
    ]
    assert rig.messages("t2")[0].text == "hi" and len(rig.messages("t1")) == 4


async def test_run_record_keeps_the_start_time_and_ends_with_the_run() -> None:
    seen: list[datetime] = []

    def probe() -> str:
        """Record when the step ran."""
        seen.append(datetime.now(UTC))
        return "ok"

    rig = scripted_runtime([ScriptedTurn.call("probe"), "done"], tools=[probe])
    before = datetime.now(UTC)
    state = await rig.run(thread_id="t")
    after = datetime.now(UTC)
    record = await rig.store.get_run(state.run_id)
    assert record is not None and record.phase is Phase.ENDED and record.steps == 2
    # Started when the run started (not when it ended), updated at the end.
    assert before <= record.started_at <= seen[0] <= record.updated_at <= after
