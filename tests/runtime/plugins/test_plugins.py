"""Plugins: capability bounds (at resolve and at commit), plugin config, resolution
errors, and the catalog fingerprint (SPEC 3.4, 3.8)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from pydantic import BaseModel, ConfigDict, Field

from awaken_runtime import (
    AgentConfigError,
    AgentRuntimeBuilder,
    CapabilityBoundError,
    CapabilityBoundFailure,
    Command,
    Contributions,
    Error,
    HookReaction,
    MergePolicy,
    ModelSpec,
    NaturalEnd,
    PhaseHookPoint,
    ResolutionError,
    Scope,
    ScriptedExecutor,
    ScriptedTurn,
    StateKey,
    ToolOutput,
    tool,
)


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: what to echo
    """
    return text


@tool
def shout(text: str) -> str:
    """Shout the text.

    Args:
        text: what to shout
    """
    return text.upper()


async def _noop(ctx):
    return None


def _noop_gate(ctx, call):
    return None


# -- contributions checked against the bound at resolve -----------------------------


@pytest.mark.parametrize(
    ("bound", "contributions", "item_part"),
    [
        pytest.param({}, Contributions(tools=[echo]), "echo", id="tool-not-in-tool_ids"),
        pytest.param(
            {"tool_ids": {"shout"}}, Contributions(tools=[echo]), "echo", id="other-tool-declared"
        ),
        pytest.param(
            {"phase_hooks": {PhaseHookPoint.STEP_START}},
            Contributions(phase_hooks={PhaseHookPoint.STEP_END: _noop}),
            "STEP_END",
            id="undeclared-phase-hook",
        ),
        pytest.param({}, Contributions(tool_gates=[_noop_gate]), "tool_gates", id="gates"),
        pytest.param(
            {}, Contributions(tool_observers=[_noop]), "tool_observers", id="tool-observers"
        ),
        pytest.param({}, Contributions(run_end_guards=[_noop]), "run_end_guards", id="guards"),
        pytest.param(
            {}, Contributions(dynamic_tools=[lambda: [echo]]), "dynamic_tools", id="dynamic-tools"
        ),
        pytest.param(
            {"state_keys": ["thread:allowed"]},
            Contributions(state_keys=["thread:secret"]),
            "secret",
            id="undeclared-state-key",
        ),
        pytest.param(
            {"state_keys": ["thread:counter"]},
            Contributions(state_keys=[StateKey("counter", int, scope=Scope.PROFILE, default=0)]),
            "profile:counter",
            id="state-key-wrong-scope",
        ),
    ],
)
async def test_contribution_outside_bound_fails_resolution(
    make_plugin, make_runtime, bound, contributions, item_part
):
    plugin = make_plugin("greedy", bound, contributions)
    rig = make_runtime(["never"], plugins=[plugin])
    with pytest.raises(CapabilityBoundError) as info:
        rig.runtime.resolve("agent")
    assert info.value.plugin_id == "greedy"
    assert item_part in info.value.item
    assert "'greedy'" in str(info.value) and item_part in str(info.value)
    # the run refuses before any inference happens
    with pytest.raises(CapabilityBoundError):
        await rig.run()
    assert rig.executor.calls == 0


def test_contributions_within_bound_resolve(make_plugin, make_runtime):
    plugin = make_plugin(
        "tidy",
        {
            "tool_ids": {"echo"},
            "state_keys": ["thread:notes"],
            "phase_hooks": {PhaseHookPoint.STEP_END},
            "tool_gates": True,
        },
        Contributions(
            tools=[echo],
            state_keys=["thread:notes"],
            phase_hooks={PhaseHookPoint.STEP_END: _noop},
            tool_gates=[_noop_gate],
        ),
    )
    rig = make_runtime(plugins=[plugin], tool_ids=[])
    snapshot = rig.runtime.resolve("agent")
    assert [t.id for t in snapshot.tools] == ["echo"]
    assert [p.manifest.id for p in snapshot.plugins] == ["tidy"]


# -- the bound checked at every commit --------------------------------------------------


def _writer(key, value, scope=Scope.THREAD, merge=MergePolicy.DISJOINT):
    async def hook(ctx):
        return HookReaction(commands=[Command.set(key, value, scope=scope, merge=merge)])

    return hook


@pytest.mark.parametrize("bad_first", [True, False], ids=["bad-first", "bad-last"])
async def test_undeclared_write_at_commit_fails_closed(make_plugin, make_runtime, bad_first):
    point = PhaseHookPoint.STEP_START
    good = make_plugin(
        "good",
        {"state_keys": ["thread:good-key"], "phase_hooks": {point}},
        Contributions(phase_hooks={point: _writer("good-key", "g")}),
    )
    bad = make_plugin(
        "sneaky",
        {"state_keys": ["thread:declared"], "phase_hooks": {point}},
        Contributions(
            phase_hooks={
                point: [_writer("declared", "fine"), _writer("undeclared-key", "x")],
            }
        ),
    )
    plugins = [bad, good] if bad_first else [good, bad]
    rig = make_runtime(["never reached"], plugins=plugins)
    state = await rig.run(thread_id="t")

    assert isinstance(state.end_cause, Error)
    failure = state.end_cause.failure
    assert isinstance(failure, CapabilityBoundFailure)
    assert failure.plugin_id == "sneaky"
    assert "undeclared-key" in failure.item
    assert "sneaky" in failure.message and "undeclared-key" in failure.message
    # nothing of that batch is committed: not the offending write, not the same
    # plugin's declared write, not another plugin's write in the same phase
    for key in ("good-key", "declared", "undeclared-key"):
        assert state.value(key) is None
        assert (Scope.THREAD, key) not in rig.store.thread_state("t")
    committed = [c.key for batch in state.log for _p, c in batch.entries]
    assert not {"good-key", "declared", "undeclared-key"} & set(committed)
    assert rig.executor.calls == 0


async def test_write_to_declared_key_in_other_scope_is_a_bound_failure(make_plugin, make_runtime):
    point = PhaseHookPoint.RUN_START
    plugin = make_plugin(
        "scoped",
        {"state_keys": ["thread:prefs"], "phase_hooks": {point}},
        Contributions(phase_hooks={point: _writer("prefs", {"a": 1}, scope=Scope.PROFILE)}),
    )
    rig = make_runtime(plugins=[plugin])
    state = await rig.run()
    assert isinstance(state.end_cause, Error)
    assert isinstance(state.end_cause.failure, CapabilityBoundFailure)
    assert state.end_cause.failure.plugin_id == "scoped"
    assert "profile:prefs" in state.end_cause.failure.item


async def test_declared_write_commits(make_plugin, make_runtime):
    point = PhaseHookPoint.RUN_START
    plugin = make_plugin(
        "scoped",
        {"state_keys": ["thread:prefs"], "phase_hooks": {point}},
        Contributions(phase_hooks={point: _writer("prefs", {"a": 1})}),
    )
    rig = make_runtime(plugins=[plugin])
    state = await rig.run(thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert rig.store.thread_state("t")[(Scope.THREAD, "prefs")] == {"a": 1}


async def test_plugin_tool_writing_undeclared_key_is_a_bound_failure(make_plugin, make_runtime):
    @tool
    def stash(ctx_value: str) -> ToolOutput:
        """Stash a value.

        Args:
            ctx_value: the value
        """
        return ToolOutput.ok("stashed", state=[Command.set("stash", ctx_value)])

    plugin = make_plugin("stasher", {"tool_ids": {"stash"}}, Contributions(tools=[stash]))
    rig = make_runtime(
        [ScriptedTurn.call("stash", {"ctx_value": "v"}), "done"], plugins=[plugin], tool_ids=[]
    )
    state = await rig.run(thread_id="t")
    assert isinstance(state.end_cause, Error)
    failure = state.end_cause.failure
    assert isinstance(failure, CapabilityBoundFailure)
    assert failure.plugin_id == "stasher" and "stash" in failure.item
    assert (Scope.THREAD, "stash") not in rig.store.thread_state("t")


# -- plugin config ----------------------------------------------------------------------


class LimitConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(default=3, ge=1)
    label: str = "x"


def _cfg_plugin(make_plugin):
    return make_plugin("limiter", config_model=LimitConfig)


def test_valid_plugin_config_reaches_resolve(make_plugin, make_runtime):
    plugin = _cfg_plugin(make_plugin)
    rig = make_runtime(plugins=[plugin], plugin_config={"limiter": {"limit": 7}})
    snapshot = rig.runtime.resolve("agent")
    assert plugin.configs == [LimitConfig(limit=7)]
    assert snapshot.plugins[0].config == {"limit": 7, "label": "x"}


def test_missing_plugin_config_uses_defaults(make_plugin, make_runtime):
    plugin = _cfg_plugin(make_plugin)
    rig = make_runtime(plugins=[plugin])
    rig.runtime.resolve("agent")
    assert plugin.configs == [LimitConfig()]


@pytest.mark.parametrize(
    ("config", "field", "reason"),
    [
        ({"limit": 0}, "limit", "greater than or equal to 1"),
        ({"limit": "many"}, "limit", "valid integer"),
        ({"label": 5}, "label", "valid string"),
        ({"limt": 2}, "limt", "Extra inputs are not permitted"),
    ],
)
def test_bad_plugin_config_names_plugin_field_and_reason(
    make_plugin, make_runtime, config, field, reason
):
    rig = make_runtime(plugins=[_cfg_plugin(make_plugin)], plugin_config={"limiter": config})
    with pytest.raises(AgentConfigError) as info:
        rig.runtime.resolve("agent")
    message = str(info.value)
    assert "'limiter'" in message
    assert field in message
    assert reason in message


def test_config_for_plugin_not_enabled(make_plugin, make_runtime):
    rig = make_runtime(
        plugins=[_cfg_plugin(make_plugin)],
        plugin_ids=[],
        plugin_config={"limiter": {"limit": 2}},
    )
    with pytest.raises(AgentConfigError, match="limiter"):
        rig.runtime.resolve("agent")


def test_config_for_plugin_without_config_model(make_plugin, make_runtime):
    plugin = make_plugin("plain")
    rig = make_runtime(plugins=[plugin], plugin_config={"plain": {"verbose": True}})
    with pytest.raises(AgentConfigError) as info:
        rig.runtime.resolve("agent")
    assert "'plain'" in str(info.value) and "verbose" in str(info.value)


def test_empty_config_table_for_plugin_without_config_model_is_fine(make_plugin, make_runtime):
    plugin = make_plugin("plain")
    rig = make_runtime(plugins=[plugin], plugin_config={"plain": {}})
    rig.runtime.resolve("agent")
    assert plugin.configs == [None]


# -- unknown ids --------------------------------------------------------------------


def _builder(model_spec, *agents, tools=(), plugins=()):
    b = (
        AgentRuntimeBuilder(discover=False)
        .with_model(model_spec)
        .with_model(ModelSpec(id="other-model", provider="scripted", model="o"))
        .with_provider("scripted", ScriptedExecutor(["x"]))
    )
    for t in tools:
        b.with_tool(t)
    for p in plugins:
        b.with_plugin(p)
    for a in agents:
        b.with_agent_spec(a)
    return b


@pytest.mark.parametrize(
    ("fields", "kind", "missing", "available"),
    [
        ({"tool_ids": ["echo", "nope"]}, "tool", "nope", ["'echo'", "'shout'"]),
        ({"model_binding": "gpt-9"}, "model", "gpt-9", ["'test-model'", "'other-model'"]),
        ({"plugin_ids": ["ghost"]}, "plugin", "ghost", ["'helper'"]),
        ({"delegates": ["helper-agent", "phantom"]}, "delegate agent", "phantom", ["'agent'"]),
    ],
)
def test_unknown_ids_name_it_and_list_available(
    model_spec, agent_config, make_plugin, fields, kind, missing, available
):
    rt = _builder(
        model_spec,
        agent_config(**fields),
        agent_config("helper-agent"),
        tools=[echo, shout],
        plugins=[make_plugin("helper")],
    ).build()
    with pytest.raises(ResolutionError) as info:
        rt.resolve("agent")
    err = info.value
    assert (err.kind, err.missing, err.agent_id) == (kind, missing, "agent")
    assert repr(missing) in str(err)
    for name in available:
        assert name in str(err)


def test_unknown_provider_names_it(agent_config):
    rt = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="test-model", provider="openai-ish", model="m"))
        .with_provider("scripted", ScriptedExecutor(["x"]))
        .with_agent_spec(agent_config())
        .build()
    )
    with pytest.raises(ResolutionError) as info:
        rt.resolve("agent")
    assert info.value.kind == "provider" and info.value.missing == "openai-ish"
    assert "'scripted'" in str(info.value)


async def test_unknown_agent(model_spec, agent_config):
    rt = _builder(model_spec, agent_config()).build()
    with pytest.raises(ResolutionError) as info:
        await rt.run("nobody", "hi")
    assert info.value.missing == "nobody" and "'agent'" in str(info.value)


# -- fingerprint --------------------------------------------------------------------


def _fp(model_spec, agent_config, make_plugin, *, description="Echo.", limit=3, version="1.0.0"):
    echo_tool = tool(description=description)(echo.fn)
    plugin = make_plugin(
        "limiter",
        {"phase_hooks": {PhaseHookPoint.STEP_END}},
        config_model=LimitConfig,
        version=version,
    )
    config = agent_config(
        tool_ids=["echo"], plugin_ids=["limiter"], plugin_config={"limiter": {"limit": limit}}
    )
    rt = _builder(model_spec, config, tools=[echo_tool], plugins=[plugin]).build()
    return rt.resolve("agent").fingerprint


def test_fingerprint_stable_across_builds(model_spec, agent_config, make_plugin):
    first = _fp(model_spec, agent_config, make_plugin)
    second = _fp(model_spec, agent_config, make_plugin)
    assert first == second
    assert len(first) == 64


def test_fingerprint_changes_with_tool_description(model_spec, agent_config, make_plugin):
    base = _fp(model_spec, agent_config, make_plugin)
    assert _fp(model_spec, agent_config, make_plugin, description="Echo it back.") != base


def test_fingerprint_changes_with_plugin_config(model_spec, agent_config, make_plugin):
    base = _fp(model_spec, agent_config, make_plugin)
    assert _fp(model_spec, agent_config, make_plugin, limit=4) != base
    # the same validated config written differently is the same agent
    assert _fp(model_spec, agent_config, make_plugin, limit=3) == base


def test_fingerprint_changes_with_plugin_version(model_spec, agent_config, make_plugin):
    base = _fp(model_spec, agent_config, make_plugin)
    assert _fp(model_spec, agent_config, make_plugin, version="2.0.0") != base


_FP_SCRIPT = textwrap.dedent(
    """
    from awaken_runtime import *

    class P:
        manifest = PluginManifest(
            id="p",
            bound=CapabilityBound(
                tool_ids={"alpha", "beta", "gamma"},
                state_keys=["thread:alpha", "thread:beta", "run:gamma", "profile:delta"],
                phase_hooks={PhaseHookPoint.STEP_START, PhaseHookPoint.STEP_END,
                             PhaseHookPoint.RUN_END},
                context_bands={Band.SYSTEM, Band.SUFFIX, Band.SESSION},
            ),
        )

        def resolve(self, config):
            return Contributions()

    rt = (
        AgentRuntimeBuilder(discover=False)
        .with_plugin(P())
        .with_model(ModelSpec(id="m", provider="s", model="s"))
        .with_provider("s", ScriptedExecutor([]))
        .with_agent_spec(AgentConfig(id="a", model_binding="m", plugin_ids=["p"]))
        .build()
    )
    print(rt.resolve("a").fingerprint)
    """
)


def test_fingerprint_stable_across_processes():
    """A ticket's fingerprint must match after a restart (SPEC 3.7: resume in a new
    process), so it cannot depend on the per-process string hash seed."""
    seen = {}
    for seed in ("0", "1", "2", "3"):
        env = {"PYTHONHASHSEED": seed, "PATH": ""}
        out = subprocess.run(
            [sys.executable, "-c", _FP_SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        seen[seed] = out.stdout.strip()
    assert len(set(seen.values())) == 1, json.dumps(seen, indent=1)
