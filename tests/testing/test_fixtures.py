"""The ``awaken`` fixture (awaken-testing's pytest plugin) on declarative plugins.

Each helper is checked both ways: it passes on the outcome it names and fails,
with a message naming what happened instead, on any other.
"""

from __future__ import annotations

import pytest

from awaken_runtime import (
    AwaitReason,
    Band,
    Command,
    ContextMessage,
    Contributions,
    Deny,
    PluginBase,
    PluginManifest,
    Scope,
    ScriptedTurn,
    StateKey,
    Suspend,
    inject,
    phase_hook,
    tool,
    tool_gate,
)
from awaken_testing import REMOVED, PluginHarness


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


class Counter(PluginBase, id="t-counter"):
    """Counts steps in thread state."""

    steps = StateKey("steps", int, default=0)
    scratch = StateKey("scratch", str, scope=Scope.RUN)
    tools = (ping,)
    context_bands = (Band.SYSTEM,)

    @phase_hook("before_inference")
    def note(self, ctx):
        return inject(ContextMessage(key="count", band=Band.SYSTEM, content="COUNTER ON"))

    @phase_hook("step_end")
    def count(self, ctx):
        return [self.steps.set(self.steps.get(ctx.store) + 1), self.scratch.set("x")]


class Sneaky(PluginBase, id="t-sneaky"):
    """Writes a key it never declared."""

    @phase_hook("step_end")
    async def write(self, ctx):
        return Command.set("not-mine", 1)


class Asker(PluginBase, id="t-asker"):
    """Asks before every ping."""

    tools = (ping,)

    @tool_gate
    def ask(self, ctx, call):
        return Suspend(await_reason=AwaitReason.TOOL_PERMISSION, payload={"tool": call.name})


def test_fixture_is_the_harness(awaken):
    assert isinstance(awaken, PluginHarness)


def test_requests_delta_and_value(awaken):
    rig = awaken.rig(Counter(), turns=[ScriptedTurn.call("ping"), "done", "again"])
    result = rig.run_sync("hi").assert_natural_end()
    assert len(result.requests) == 2
    assert "COUNTER ON" in result.requests[0].messages[0].text
    assert [t.id for t in result.last_request.tools] == ["ping"]
    assert result.delta(by="t-counter") == {"thread:steps": 2, "run:scratch": "x"}
    assert result.assert_committed(Counter.steps, 2, by="t-counter") == 2
    assert result.value("thread:steps") == 2 == result.value(Counter.steps)
    # a second run continues the same thread; requests are per run, the rig keeps all
    again = rig.run_sync("more")
    assert again.assert_committed("steps") == 3
    assert len(again.requests) == 1 and len(rig.requests) == 3


def test_assert_committed_explains_a_missing_write(awaken):
    result = awaken.rig(Counter()).run_sync()
    with pytest.raises(AssertionError, match=r"no write to thread:other.*thread:steps"):
        result.assert_committed("other")
    with pytest.raises(AssertionError, match="expected 5"):
        result.assert_committed("thread:steps", 5)
    with pytest.raises(AssertionError, match="no write to thread:steps by 'someone'"):
        result.assert_committed("steps", by="someone")


def test_removed_keys_show_as_removed(awaken):
    class Forget(PluginBase, id="t-forget"):
        """Removes its key."""

        gone = StateKey("gone", int)

        @phase_hook("step_end")
        def drop(self, ctx):
            return self.gone.remove()

    assert awaken.rig(Forget()).run_sync().delta() == {"thread:gone": REMOVED}


def test_bound_violation_at_commit(awaken):
    rig = awaken.rig(Sneaky(), Counter())
    result = rig.run_sync()
    failure = result.assert_bound_violation("t-sneaky", match="not-mine")
    assert failure.plugin_id == "t-sneaky"
    assert "steps" not in str(result.delta())  # the batch failed closed: nothing committed
    assert rig.assert_bound_violation("again", "t-sneaky", match="writes thread:'not-mine'")
    with pytest.raises(AssertionError, match="bound of 't-sneaky' was exceeded, expected 'x'"):
        result.assert_bound_violation("x")
    with pytest.raises(AssertionError, match=r"expected a natural end.*CapabilityBoundFailure"):
        result.assert_natural_end()


class Liar:
    """A hand-written plugin whose contributions exceed its (empty) bound."""

    manifest = PluginManifest(id="t-liar")

    def resolve(self, config):
        return Contributions(tools=[ping])


def test_bound_violation_at_resolve(awaken):
    rig = awaken.rig(Liar())
    message = rig.assert_bound_violation("hi", "t-liar", match="contributes tool 'ping'")
    assert "declare tool_ids" in message


def test_bound_violation_helper_fails_on_a_clean_run(awaken):
    rig = awaken.rig(Counter())
    with pytest.raises(AssertionError, match=r"expected a capability-bound failure.*natural_end"):
        rig.assert_bound_violation()


def test_suspension_and_resume(awaken):
    rig = awaken.rig(Asker(), turns=[ScriptedTurn.call("ping"), "after"])
    result = rig.run_sync("ping please")
    ticket = result.assert_suspended(AwaitReason.TOOL_PERMISSION, tool="ping")
    assert ticket.payload == {"tool": "ping"}
    with pytest.raises(AssertionError, match="no call of 'other' is parked"):
        result.assert_suspended(tool="other")
    with pytest.raises(AssertionError, match="no call waits for user_input"):
        result.assert_suspended("user_input")
    resumed = rig.resume_sync(ticket, Deny(reason="no"))
    resumed.assert_natural_end()
    assert resumed.text == "after" and len(resumed.requests) == 1
    with pytest.raises(AssertionError, match=r"expected the run to wait.*natural_end"):
        resumed.assert_suspended()


async def test_async_runs(awaken):
    rig = awaken.rig(Counter(), turns=["a", "b"])
    first = await rig.run("one")
    second = await rig.run("two", thread_id="other")
    assert first.value("steps") == 1 and second.value("steps") == 1
    assert [m.role for m in rig.messages()] == ["user", "assistant"]


def test_config_goes_to_the_first_plugin(awaken):
    from pydantic import BaseModel

    class Cfg(BaseModel):
        greeting: str = "hi"

    class Greeter(PluginBase, id="t-greeter"):
        """Greets."""

        config_model = Cfg
        context_bands = (Band.SUFFIX,)

        @phase_hook("before_inference")
        def greet(self, ctx):
            text = self.config.greeting
            return inject(ContextMessage(key="greet", band=Band.SUFFIX, content=text))

    result = awaken.rig(Greeter(), config={"greeting": "HOWDY"}).run_sync()
    assert result.last_request.messages[-1].text == "HOWDY"
    with pytest.raises(ValueError, match="no plugin was given"):
        awaken.rig(config={"greeting": "x"})


def test_unknown_installed_id_says_what_is_installed(awaken):
    with pytest.raises(LookupError, match=r"no installed plugin has id 'nope-nope'.*installed:"):
        awaken.rig("nope-nope")


def test_an_installed_plugin_that_failed_to_load_says_so(awaken, monkeypatch):
    from awaken_runtime import Discovery, PluginLoadError
    from awaken_testing import _harness

    broken = Discovery(failures=[PluginLoadError("t-broken", "awaken-t-broken", "boom")])
    monkeypatch.setattr(_harness, "discover", lambda: broken)
    with pytest.raises(LookupError, match=r"'t-broken' is installed but failed to load: .*boom"):
        awaken.rig("t-broken")


def test_a_hook_that_raises_is_a_plugin_failure_the_result_explains(awaken):
    class Crashes(PluginBase, id="t-crashes"):
        """Raises in its hook."""

        @phase_hook("step_start")
        def boom(self, ctx):
            raise RuntimeError("hook crashed")

    result = awaken.rig(Crashes()).run_sync()
    with pytest.raises(AssertionError, match=r"PluginFailure.*hook crashed"):
        result.assert_natural_end()
    with pytest.raises(AssertionError, match="expected a capability-bound failure"):
        result.assert_bound_violation()
    assert result.delta() == {}
