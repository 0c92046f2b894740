"""Standing context: entries injected once stay in every request of the run until withdrawn."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_runtime import (
    Band,
    ContextMessage,
    Contributions,
    Error,
    PhaseContext,
    PhaseHookPoint,
    ScriptedTurn,
    inject,
    request_context,
    tool,
)

BI = PhaseHookPoint.BEFORE_INFERENCE


@tool
def ping(q: str) -> str:
    """Ping.

    Args:
        q: anything
    """
    return "pong"


def stander(
    make_plugin: Any, plan: dict[int, list[Any]], pid: str = "stander", **bound: Any
) -> Any:
    """A plugin staging ``plan[step]`` (commands) at BEFORE_INFERENCE, nothing otherwise."""
    staged: list[int] = []

    async def hook(ctx: PhaseContext) -> Any:
        from awaken_runtime import HookReaction

        commands = plan.get(ctx.run.step)
        if commands is None:
            return None
        staged.append(ctx.run.step)
        return HookReaction(commands=commands)

    declared = {"phase_hooks": frozenset({BI}), "context_bands": frozenset({Band.SESSION})}
    declared.update(bound)
    return make_plugin(pid, declared, Contributions(phase_hooks={BI: hook}))


def keys(request: Any) -> list[str]:
    return [m.metadata["context_key"] for m in request.messages if "context_key" in m.metadata]


def session(key: str, content: str) -> ContextMessage:
    return ContextMessage(key=key, band=Band.SESSION, content=content)


async def test_a_standing_entry_is_in_every_request_until_withdrawn(
    make_runtime: Any, make_plugin: Any
) -> None:
    plan = {
        1: [inject(session("s.a", "A"), session("s.b", "B"), standing=True)],
        3: [inject(session("s.b", "B2"), standing=True, withdraw=["s.a"])],
        4: [inject(session("s.once", "now"))],  # request-only, next to the standing one
    }
    turns = [ScriptedTurn.call("ping", {"q": str(i)}) for i in range(4)]
    rig = make_runtime([*turns, "done"], plugins=[stander(make_plugin, plan)], tools=[ping])
    state = await rig.run()
    assert state.final_text == "done"
    requests = rig.executor.requests
    assert [keys(r) for r in requests] == [
        ["s.a", "s.b"],
        ["s.a", "s.b"],  # nothing staged at step 2: still there
        ["s.b"],
        ["s.b", "s.once"],
        ["s.b"],  # the request-only entry lasted one request
    ]
    assert [m.text for m in requests[2].messages if m.metadata.get("context_key")] == ["B2"]


async def test_standing_entries_keep_the_bound_rules(make_runtime: Any, make_plugin: Any) -> None:
    suffix = ContextMessage(key="s.x", band=Band.SUFFIX, content="x")
    rig = make_runtime(
        ["done"], plugins=[stander(make_plugin, {1: [inject(suffix, standing=True)]})]
    )
    state = await rig.run()
    assert isinstance(state.end_cause, Error)
    assert state.end_cause.failure.kind == "capability_bound"


async def test_a_plugin_cannot_withdraw_another_plugins_entry(
    make_runtime: Any, make_plugin: Any
) -> None:
    owner = stander(make_plugin, {1: [inject(session("s.a", "A"), standing=True)]}, pid="owner")
    thief = stander(make_plugin, {2: [inject(standing=True, withdraw=["s.a"])]}, pid="thief")
    turns = [ScriptedTurn.call("ping", {"q": "1"}), "done"]
    state = await make_runtime(turns, plugins=[owner, thief], tools=[ping]).run()
    assert isinstance(state.end_cause, Error)
    assert "s.a" in state.end_cause.failure.message


def test_withdraw_needs_standing() -> None:
    with pytest.raises(ValueError, match="standing=True"):
        inject(withdraw=["k"])


def test_request_context_merges_standing_under_request_only() -> None:
    a = {"key": "a", "band": "session", "content": "A"}
    b = {"key": "b", "band": "session", "content": "B"}
    b2 = {"key": "b", "band": "session", "content": "B2"}
    assert request_context(None, None) is None
    assert request_context({}, {"a": a}) == {"a": a}
    assert request_context({"b": None}, None) is None  # nothing left in force
    assert request_context({"a": a, "b": None}, None) == {"a": a}  # b was withdrawn
    assert request_context({"a": a, "b": b}, {"b": b2}) == {"a": a, "b": b2}
