"""Tool narrowing: a hidden tool is absent from the request and its call blocked,
two plugins' filters intersect, a filter lasts one request, nothing adds a tool
the agent lacks, and narrowing outside the bound is a bound failure.
"""

from __future__ import annotations

import pytest
from loop_rig import BI, counted_tools, done_events, failure_of, narrower, tool_ids

from awaken_runtime import (
    TOOL_FILTER,
    CapabilityBoundFailure,
    Contributions,
    HookReaction,
    NaturalEnd,
    Scope,
    ScriptedTurn,
    ShortCircuit,
    ToolFilter,
    ToolOutput,
)

# -- tool narrowing ---------------------------------------------------------------------


async def test_hidden_tool_absent_from_request(make_plugin, make_runtime):
    tools, _ = counted_tools()
    plugin = narrower("hider", make_plugin, ToolFilter(hide=frozenset({"beta"})))
    rig = make_runtime(["ok"], tools=tools, plugins=[plugin])
    await rig.run()
    assert tool_ids(rig.executor.requests[0]) == ["alpha", "gamma"]


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
    tools, _ = counted_tools()
    p1 = narrower("one", make_plugin, first)
    p2 = narrower("two", make_plugin, second)
    for order in ([p1, p2], [p2, p1]):
        rig = make_runtime(["ok"], tools=tools, plugins=order)
        await rig.run()
        assert tool_ids(rig.executor.requests[0]) == expected


async def test_call_to_hidden_tool_is_blocked(make_plugin, make_runtime):
    tools, calls = counted_tools()
    plugin = narrower("hider", make_plugin, ToolFilter(hide=frozenset({"beta"})))
    rig = make_runtime([ScriptedTurn.call("beta"), "done"], tools=tools, plugins=[plugin])
    events = await rig.events("go", thread_id="t")
    assert calls == []
    (done,) = done_events(events)
    assert done.outcome == "blocked"
    tool_msg = next(m for m in rig.messages("t") if m.role == "tool")
    assert tool_msg.metadata.get("is_error") is True
    assert "beta" in tool_msg.text
    assert events[-1].end_cause == NaturalEnd()


async def test_filter_applies_to_its_own_request_only(make_plugin, make_runtime):
    tools, calls = counted_tools()
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
    assert tool_ids(rig.executor.requests[0]) == ["alpha", "gamma"]
    assert tool_ids(rig.executor.requests[1]) == ["alpha", "beta", "gamma"]
    assert calls == ["alpha", "beta"]
    assert state.value(TOOL_FILTER, Scope.RUN) is None


async def test_nothing_can_add_a_tool_the_agent_lacks(make_plugin, make_runtime):
    tools, calls = counted_tools()
    narrow = narrower("widen", make_plugin, ToolFilter(only=frozenset({"alpha", "ghost"})))

    def permissive_gate(ctx, call):
        return ShortCircuit(output=ToolOutput.ok("granted!"))

    gate = make_plugin("granter", {"tool_gates": True}, Contributions(tool_gates=[permissive_gate]))
    rig = make_runtime(
        [ScriptedTurn.call("ghost"), ScriptedTurn.call("beta"), "done"],
        tools=tools,
        plugins=[narrow, gate],
    )
    events = await rig.events("go", thread_id="t")
    assert tool_ids(rig.executor.requests[0]) == ["alpha"]
    assert [d.outcome for d in done_events(events)] == ["blocked", "blocked"]
    assert "granted!" not in [m.text for m in rig.messages("t")]
    assert calls == []


async def test_filter_entry_for_another_plugin_is_a_bound_failure(make_plugin, make_runtime):
    tools, _ = counted_tools()
    plugin = narrower("sly", make_plugin, ToolFilter(hide={"beta"}), entry_id="someone-else")
    rig = make_runtime(["never"], tools=tools, plugins=[plugin])
    state = await rig.run()
    failure = failure_of(state)
    assert isinstance(failure, CapabilityBoundFailure) and failure.plugin_id == "sly"


async def test_narrowing_without_bound_flag_is_a_bound_failure(make_plugin, make_runtime):
    tools, _ = counted_tools()

    async def hook(ctx):
        return HookReaction(commands=[ToolFilter(hide={"beta"}).command("plain")])

    plugin = make_plugin("plain", {"phase_hooks": {BI}}, Contributions(phase_hooks={BI: hook}))
    rig = make_runtime(["never"], tools=tools, plugins=[plugin])
    state = await rig.run()
    failure = failure_of(state)
    assert isinstance(failure, CapabilityBoundFailure) and "narrows_tools" in failure.item
