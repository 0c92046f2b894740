"""``PluginBase``: the bound is derived once, from what the class declares, and enforced."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from awaken_runtime import (
    Band,
    Block,
    CapabilityBoundFailure,
    Command,
    Complete,
    Effect,
    Error,
    HookReaction,
    NaturalEnd,
    PhaseHookPoint,
    Plugin,
    PluginBase,
    PluginDefinitionError,
    ScheduledAction,
    Scope,
    ScriptedTurn,
    StateKey,
    StateKeyDecl,
    Steer,
    action_handler,
    effect_handler,
    phase_hook,
    run_end_guard,
    stop_condition,
    tool,
    tool_gate,
    tool_observer,
    tool_source,
)


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def extra(x: int) -> int:
    """Double a number.

    Args:
        x: the number
    """
    return 2 * x


class Everything(PluginBase, id="everything", version="2.0.0"):
    """Uses every kind of declaration.

    The second paragraph is not part of the description.
    """

    steps = StateKey("steps", int, default=0)
    seen = StateKey("seen", list, default=[], scope=Scope.RUN)
    state_keys = ("profile:prefs",)
    tools = (ping, extra)
    context_bands = ("system", Band.SUFFIX)
    inference_params = ("temperature",)
    narrows_tools = True

    @phase_hook(PhaseHookPoint.STEP_END)
    def count(self, ctx):
        return self.steps.set(self.steps.get(ctx.store) + 1)

    @phase_hook("run_start")
    @phase_hook("RUN_END")
    async def bracket(self, ctx):
        return None

    @tool_gate
    def gate(self, ctx, call):
        return None

    @tool_observer
    def watch(self, ctx):
        return [self.seen.set([*self.seen.get(ctx.store), ctx.tool_call.name])]

    @run_end_guard
    def guard(self, ctx):
        return Complete()

    @stop_condition
    def stop(self, ctx):
        return None

    @tool_source
    def more_tools(self):
        return []

    @effect_handler("notify")
    async def notify(self, effect, ctx):
        return None

    @action_handler("later")
    def later(self, action, ctx):
        return None


def test_bound_is_derived_from_the_declarations():
    bound = Everything.manifest.bound
    assert bound.tool_ids == {"ping", "extra"}
    assert bound.state_keys == {
        StateKeyDecl(key="steps", scope=Scope.THREAD),
        StateKeyDecl(key="seen", scope=Scope.RUN),
        StateKeyDecl(key="prefs", scope=Scope.PROFILE),
    }
    assert bound.phase_hooks == {
        PhaseHookPoint.STEP_END,
        PhaseHookPoint.RUN_START,
        PhaseHookPoint.RUN_END,
    }
    assert bound.context_bands == {Band.SYSTEM, Band.SUFFIX}
    assert bound.inference_params == {"temperature"}
    assert bound.effect_handlers == {"notify"} and bound.action_handlers == {"later"}
    for flag in ("tool_gates", "tool_observers", "run_end_guards", "stop_conditions"):
        assert getattr(bound, flag), flag
    assert bound.dynamic_tools and bound.narrows_tools and not bound.narrows_window
    manifest = Everything.manifest
    assert (manifest.id, manifest.version) == ("everything", "2.0.0")
    assert manifest.description == "Uses every kind of declaration."


def test_the_manifest_is_built_once_at_class_definition():
    a, b = Everything(), Everything()
    assert a.manifest is b.manifest is Everything.manifest
    assert isinstance(a, Plugin)


def test_an_empty_plugin_declares_nothing():
    class Quiet(PluginBase, id="quiet", description="explicit"):
        pass

    assert Quiet.manifest.bound == type(Quiet.manifest.bound)()
    assert Quiet.manifest.description == "explicit"
    assert Quiet().resolve(None).tools == ()


def test_resolve_gives_each_agent_a_copy_with_its_config():
    class Cfg(BaseModel):
        n: int = 1

    class Configured(PluginBase, id="configured"):
        config_model = Cfg

        @phase_hook("step_end")
        def hook(self, ctx):
            return HookReaction(stop=str(self.config.n))

    registered = Configured()
    one, two = registered.resolve(Cfg(n=1)), registered.resolve(Cfg(n=2))
    assert registered.config is None
    assert Configured.manifest.config_model is Cfg
    (h1,) = one.hooks_at(PhaseHookPoint.STEP_END)
    (h2,) = two.hooks_at(PhaseHookPoint.STEP_END)
    assert h1 is not h2


def test_runs_with_hooks_observer_and_guard(make_runtime):
    rig = make_runtime(
        [ScriptedTurn.call("ping"), ScriptedTurn.call("extra", {"x": 2}), "done"],
        plugins=[Everything()],
    )
    state = rig.runtime.run_sync("agent", "hi", thread_id="t")
    assert state.end_cause == NaturalEnd()
    assert state.value("steps") == 3
    assert state.value("seen", Scope.RUN) == ["ping", "extra"]


def test_a_write_outside_the_declarations_fails_closed_at_commit(make_runtime):
    class Sneaky(PluginBase, id="sneaky"):
        mine = StateKey("mine", int)

        @phase_hook("step_end")
        def write(self, ctx):
            return [self.mine.set(1), Command.set("mine", 1, scope=Scope.PROFILE)]

    state = make_runtime(["x"], plugins=[Sneaky()]).runtime.run_sync("agent", "hi")
    assert isinstance(state.end_cause, Error)
    failure = state.end_cause.failure
    assert isinstance(failure, CapabilityBoundFailure) and failure.plugin_id == "sneaky"
    assert "profile:'mine'" in failure.message
    assert state.value("mine") is None  # nothing of the batch committed


def test_steer_guard_and_action_handler_shorthands(make_runtime):
    class Steering(PluginBase, id="steering"):
        done = StateKey("steered", bool, default=False, scope=Scope.RUN)

        @run_end_guard
        def once(self, ctx):
            return None if self.done.get(ctx.store) else Steer(message="again")

        @phase_hook("after_inference")
        def schedule(self, ctx):
            return HookReaction(schedule=[ScheduledAction(name="mark", point="step_end")])

        @action_handler("mark")
        def mark(self, action, ctx):
            return self.done.set(True)

    rig = make_runtime(["first", "second"], plugins=[Steering()])
    state = rig.runtime.run_sync("agent", "hi")
    assert state.end_cause == NaturalEnd() and state.final_text == "second"


def test_a_hook_returning_something_odd_names_itself(make_runtime):
    class Odd(PluginBase, id="odd"):
        @phase_hook("step_end")
        def weird(self, ctx):
            return 42

    state = make_runtime(["x"], plugins=[Odd()]).runtime.run_sync("agent", "hi")
    assert isinstance(state.end_cause, Error)
    assert "Odd.weird returned 42" in state.end_cause.failure.message


def test_effects_reach_the_declared_handler(make_runtime):
    got: list[str] = []

    class Notifier(PluginBase, id="notifier"):
        @phase_hook("step_end")
        def emit(self, ctx):
            return HookReaction(effects=[Effect(name="notify", payload={"n": 1})])

        @effect_handler("notify")
        async def notify(self, effect, ctx):
            got.append(effect.name)

    rig = make_runtime(["x"], plugins=[Notifier()])
    assert rig.runtime.run_sync("agent", "hi").end_cause == NaturalEnd()
    assert got == ["notify"]


def test_gate_blocks(make_runtime):
    class NoPing(PluginBase, id="no-ping"):
        @tool_gate
        def gate(self, ctx, call):
            return Block(reason="no pinging")

    rig = make_runtime([ScriptedTurn.call("ping"), "ok"], tools=[ping], plugins=[NoPing()])
    state = rig.runtime.run_sync("agent", "hi")
    assert "no pinging" in next(m for m in state.new_messages if m.role == "tool").text


# -- definition errors: raised by the class statement, naming the class -----------------


@pytest.mark.parametrize(
    ("point", "hint"),
    [
        ("StepStart", "did you mean PhaseHookPoint.STEP_START?"),
        ("AfterToolExecute", "did you mean PhaseHookPoint.AFTER_TOOL?"),
        ("before-inference", "did you mean PhaseHookPoint.BEFORE_INFERENCE?"),
        ("", "hook points are PhaseHookPoint.RUN_START"),
    ],
)
def test_unknown_hook_point_suggests_the_name(point, hint):
    with pytest.raises(PluginDefinitionError, match=f"unknown hook point {point!r}") as info:
        phase_hook(point)
    assert hint in str(info.value)


@pytest.mark.parametrize("bad_id", ["My_Plugin", "UPPER", "-lead", "a--b", ""])
def test_bad_ids_name_the_class(bad_id):
    with pytest.raises(PluginDefinitionError, match=r"Bad: plugin id .* kebab-case"):

        class Bad(PluginBase, id=bad_id):
            pass


def test_missing_id_is_a_type_error():
    with pytest.raises(TypeError, match="id"):

        class NoId(PluginBase):  # type: ignore[call-arg]
            pass


def test_bad_tools_and_config_model():
    with pytest.raises(PluginDefinitionError, match=r"T1.tools must be a list"):

        class T1(PluginBase, id="t1"):
            tools = ping

    with pytest.raises(PluginDefinitionError, match="neither a Tool nor a function"):

        class T2(PluginBase, id="t2"):
            tools = (3,)

    with pytest.raises(PluginDefinitionError, match="lists tool 'ping' twice"):

        class T3(PluginBase, id="t3"):
            tools = (ping, ping)

    with pytest.raises(PluginDefinitionError, match=r"T4\.config_model must be a pydantic"):

        class T4(PluginBase, id="t4"):
            config_model = dict  # type: ignore[assignment]

    with pytest.raises(PluginDefinitionError, match="T5: invalid declaration"):

        class T5(PluginBase, id="t5"):
            context_bands = ("nowhere",)


def test_two_handlers_for_one_name():
    with pytest.raises(PluginDefinitionError, match="a and b both handle effect 'x'"):

        class Twice(PluginBase, id="twice"):
            @effect_handler("x")
            async def a(self, effect, ctx):
                return None

            @effect_handler("x")
            async def b(self, effect, ctx):
                return None


def test_a_subclass_adds_to_its_parent_and_overrides_by_name():
    class Child(Everything, id="child"):
        extra_key = StateKey("child.k", int)

        @phase_hook("before_inference")
        def count(self, ctx):  # replaces the parent's STEP_END hook of the same name
            return None

    bound = Child.manifest.bound
    assert PhaseHookPoint.BEFORE_INFERENCE in bound.phase_hooks
    assert PhaseHookPoint.STEP_END not in bound.phase_hooks
    assert StateKeyDecl(key="child.k") in bound.state_keys
    assert Everything.manifest.bound.phase_hooks == {
        PhaseHookPoint.STEP_END,
        PhaseHookPoint.RUN_START,
        PhaseHookPoint.RUN_END,
    }
