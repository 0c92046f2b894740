"""Context injection (SPEC 3.4): bands placed in the request, ordering by band,
priority and key, cooldowns, entries cleared after their request and never in
the transcript, and a band outside the plugin's bound failing closed.
"""

from __future__ import annotations

import pytest
from loop_rig import BI, context_keys, counted_tools, failure_of, injector, request_summary

from awaken_runtime import (
    CONTEXT_MESSAGES,
    Band,
    CapabilityBoundFailure,
    ContextMessage,
    Contributions,
    HookReaction,
    NaturalEnd,
    PhaseHookPoint,
    Scope,
    ScriptedTurn,
    inject,
)

# -- context messages -------------------------------------------------------------------


async def test_bands_are_placed_into_the_request(make_plugin, make_runtime):
    plugin = injector(
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
    assert request_summary(first) == [
        ("system", "You are a test agent.\n\nSYSTEM NOTE"),
        ("system", "<sess>"),
        ("system", "<conv>"),
        ("user", "first"),
        ("system", "<suf>"),
    ]
    assert request_summary(second) == [
        ("system", "You are a test agent.\n\nSYSTEM NOTE"),
        ("system", "<sess>"),
        ("user", "first"),
        ("assistant", "answer one"),
        ("system", "<conv>"),
        ("user", "second"),
        ("system", "<suf>"),
    ]


async def test_conversation_band_sits_before_newest_user_turn_mid_run(make_plugin, make_runtime):
    plugin = injector(
        "ctx", make_plugin, ContextMessage(key="conv", band=Band.CONVERSATION, content="c")
    )
    tools, _ = counted_tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    await rig.run("go")
    assert [r for r, _ in request_summary(rig.executor.requests[1])] == [
        "system",
        "system",  # the conversation entry
        "user",
        "assistant",
        "tool",
    ]
    assert request_summary(rig.executor.requests[1])[1] == ("system", "<conv>")


async def test_context_without_instructions_still_gets_a_system_prompt(make_plugin, make_runtime):
    plugin = injector("ctx", make_plugin, ContextMessage(key="s", band=Band.SYSTEM, content="S"))
    rig = make_runtime(["ok"], plugins=[plugin], instructions="")
    await rig.run("hi")
    assert request_summary(rig.executor.requests[0]) == [("system", "S"), ("user", "hi")]


async def test_entries_ordered_by_band_priority_key(make_plugin, make_runtime):
    plugin = injector(
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
    assert context_keys(request) == ["s-z", "s-a", "s-b", "s-c", "x-first", "x-a", "x-b"]
    assert request.messages[0].text == "You are a test agent.\n\nONE\n\nTWO"
    assert request.messages[-1].metadata["context_key"] == "x-b"


async def test_two_plugins_writing_one_context_key_is_a_bound_error(make_plugin, make_runtime):
    one = injector(
        "one",
        make_plugin,
        ContextMessage(key="shared", band=Band.SESSION, content="from one"),
        ContextMessage(key="only-one", band=Band.SESSION, content="o"),
    )
    two = injector(
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
    plugin = injector(
        "ctx",
        make_plugin,
        ContextMessage(key="tip", band=Band.SUFFIX, content="TIP", cooldown_steps=2),
        ContextMessage(key="always", band=Band.SUFFIX, content="ALWAYS"),
    )
    tools, _ = counted_tools()
    turns = [ScriptedTurn.call("alpha") for _ in range(6)] + ["done"]
    rig = make_runtime(turns, tools=tools, plugins=[plugin])
    state = await rig.run("go")
    assert state.steps == 7
    with_tip = [r.step for r in rig.executor.requests if "tip" in context_keys(r)]
    assert with_tip == [1, 4, 7]
    assert all("always" in context_keys(r) for r in rig.executor.requests)


async def test_context_cleared_after_the_request(make_plugin, make_runtime):
    active = {"on": True}
    plugin = injector(
        "ctx",
        make_plugin,
        ContextMessage(key="once", band=Band.SESSION, content="ONCE"),
        when=lambda ctx: active["on"] and ctx.run.step == 1,
    )
    tools, _ = counted_tools()
    rig = make_runtime(
        [ScriptedTurn.call("alpha"), "first done", "second done"], tools=tools, plugins=[plugin]
    )
    state = await rig.run("go", thread_id="t")
    first, second = rig.executor.requests
    assert context_keys(first) == ["once"]
    assert context_keys(second) == []
    assert state.value(CONTEXT_MESSAGES, Scope.RUN) is None

    active["on"] = False
    await rig.run("again", thread_id="t")
    assert context_keys(rig.executor.requests[2]) == []


async def test_context_never_reaches_the_transcript(make_plugin, make_runtime):
    plugin = injector(
        "ctx",
        make_plugin,
        *(
            ContextMessage(key=f"k-{band.value}", band=band, content=f"CTX-{band.value}")
            for band in Band
        ),
    )
    tools, _ = counted_tools()
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
    plugin = injector(
        "ctx",
        make_plugin,
        ContextMessage(key="ok", band=Band.SYSTEM, content="fine"),
        ContextMessage(key="loud", band=Band.SUFFIX, content="LOUD"),
        bands=bands,
    )
    rig = make_runtime(["never"], plugins=[plugin])
    state = await rig.run("hi", thread_id="t")
    failure = failure_of(state)
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
    tools, _ = counted_tools()
    rig = make_runtime([ScriptedTurn.call("alpha"), "done"], tools=tools, plugins=[plugin])
    state = await rig.run("go")
    assert state.end_cause == NaturalEnd(), state.end_cause
    assert context_keys(rig.executor.requests[1]) == ["always", "r"]
