"""allowed-tools narrows the visible tools while a skill is active; the core blocks
calls to hidden tools. Also: the capability bound and plugin config."""

from __future__ import annotations

import pytest

from awaken_ext_skills import (
    ACTIVE_SKILLS,
    MANIFEST,
    RESOURCE_TOOL,
    SCRIPT_TOOL,
    SKILL_TOOL,
    SkillsConfig,
    SkillsPlugin,
    SkillWarning,
)
from awaken_runtime import (
    AgentConfig,
    AgentConfigError,
    AgentRuntimeBuilder,
    Band,
    ModelSpec,
    NaturalEnd,
    PhaseHookPoint,
    ScriptedExecutor,
    StateKeyDecl,
)

CALLS: list[str] = []


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    CALLS.append("add")
    return a + b


def wipe_disk() -> str:
    """Delete everything."""
    CALLS.append("wipe_disk")
    return "wiped"


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()


def _math_skill(tmp_path, skill_factory, allowed: str = "add") -> None:
    skill_factory(
        tmp_path, "math", body="Only do arithmetic.", frontmatter=f"allowed-tools: {allowed}\n"
    )


async def test_hidden_tool_is_blocked(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    _math_skill(tmp_path, skill_factory)
    rig = skills_rig(
        [
            call_turn("skill", name="math"),
            call_turn("wipe_disk"),
            call_turn("add", a=1, b=2),
            "3",
        ],
        paths=[tmp_path],
        tools=[add, wipe_disk],
    )
    state = await rig.run(thread_id="t")
    assert isinstance(state.end_cause, NaturalEnd)
    assert inspect_request.tools(rig.requests[0]) == {
        "add",
        "wipe_disk",
        SKILL_TOOL,
        RESOURCE_TOOL,
    }
    assert inspect_request.tools(rig.requests[1]) == {"add", SKILL_TOOL, RESOURCE_TOOL}
    blocked = rig.tool_results("t")[1]
    assert blocked.metadata.get("is_error") is True
    assert "not available" in blocked.text
    assert CALLS == ["add"]  # wipe_disk never ran


async def test_deactivation_restores_tools(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    _math_skill(tmp_path, skill_factory)
    rig = skills_rig(
        [
            call_turn("skill", name="math"),
            call_turn("skill", name="math", deactivate=True),
            call_turn("wipe_disk"),
            "done",
        ],
        paths=[tmp_path],
        tools=[add, wipe_disk],
    )
    await rig.run(thread_id="t")
    assert "wipe_disk" not in inspect_request.tools(rig.requests[1])
    assert "wipe_disk" in inspect_request.tools(rig.requests[2])
    assert CALLS == ["wipe_disk"]


async def test_narrowing_persists_into_the_next_run(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    _math_skill(tmp_path, skill_factory)
    rig = skills_rig(
        [call_turn("skill", name="math"), "ok", call_turn("wipe_disk"), "no"],
        paths=[tmp_path],
        tools=[add, wipe_disk],
    )
    await rig.run(thread_id="t")
    await rig.run("now wipe", thread_id="t")
    assert "wipe_disk" not in inspect_request.tools(rig.requests[2])
    assert CALLS == []


async def test_skills_without_allowed_tools_do_not_narrow(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    skill_factory(tmp_path, "free")
    rig = skills_rig(
        [call_turn("skill", name="free"), "ok"], paths=[tmp_path], tools=[add, wipe_disk]
    )
    await rig.run(thread_id="t")
    assert "wipe_disk" in inspect_request.tools(rig.requests[1])


async def test_union_of_active_skills(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    _math_skill(tmp_path, skill_factory)
    skill_factory(tmp_path, "cleanup", frontmatter="allowed-tools: wipe_disk\n")
    rig = skills_rig(
        [call_turn("skill", name="math"), call_turn("skill", name="cleanup"), "ok"],
        paths=[tmp_path],
        tools=[add, wipe_disk],
    )
    await rig.run(thread_id="t")
    assert inspect_request.tools(rig.requests[2]) == {
        "add",
        "wipe_disk",
        SKILL_TOOL,
        RESOURCE_TOOL,
    }


async def test_narrow_tools_off(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    _math_skill(tmp_path, skill_factory)
    rig = skills_rig(
        [call_turn("skill", name="math"), "ok"],
        paths=[tmp_path],
        tools=[add, wipe_disk],
        config={"narrow_tools": False},
    )
    await rig.run(thread_id="t")
    assert "wipe_disk" in inspect_request.tools(rig.requests[1])


async def test_script_tool_stays_visible_when_enabled(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    _math_skill(tmp_path, skill_factory, allowed="add unknown_tool")
    rig = skills_rig(
        [call_turn("skill", name="math"), "ok"],
        paths=[tmp_path],
        tools=[add, wipe_disk],
        config={"enable_scripts": True},
    )
    with pytest.warns(SkillWarning, match="'unknown_tool' are not tools of agent 'agent'"):
        await rig.run(thread_id="t")
    assert inspect_request.tools(rig.requests[1]) == {
        "add",
        SKILL_TOOL,
        RESOURCE_TOOL,
        SCRIPT_TOOL,
    }


async def test_only_unknown_ids_do_not_hide_the_tools(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    # Claude Code tool names on an agent that has none of them.
    _math_skill(tmp_path, skill_factory, allowed="Read, Grep, Glob")
    plugin = SkillsPlugin()
    rig = skills_rig(
        [call_turn("skill", name="math"), call_turn("add", a=1, b=1), "ok", "again"],
        paths=[tmp_path],
        tools=[add, wipe_disk],
        plugin=plugin,
    )
    with pytest.warns(SkillWarning) as record:
        await rig.run(thread_id="t")
        await rig.run("more", thread_id="t")
    assert inspect_request.tools(rig.requests[1]) == inspect_request.tools(rig.requests[0])
    assert "wipe_disk" in inspect_request.tools(rig.requests[3])
    assert CALLS == ["add"]
    registry = plugin.registry(SkillsConfig(paths=[str(tmp_path)], packs=False))
    (notice,) = registry.notices  # once, though the skill stayed active for three steps
    assert not notice.left_out and "does not narrow" in notice.reason
    assert "'Read', 'Grep', 'Glob'" in notice.reason
    assert sum("does not narrow" in str(w.message) for w in record) == 1


async def test_known_and_unknown_ids_narrow_to_the_known(
    tmp_path, skill_factory, skills_rig, call_turn, inspect_request
) -> None:
    _math_skill(tmp_path, skill_factory, allowed="add, Read")
    rig = skills_rig(
        [call_turn("skill", name="math"), "ok"], paths=[tmp_path], tools=[add, wipe_disk]
    )
    with pytest.warns(SkillWarning, match="'Read' are not tools"):
        await rig.run(thread_id="t")
    assert inspect_request.tools(rig.requests[1]) == {"add", SKILL_TOOL, RESOURCE_TOOL}


# -- bound and config ----------------------------------------------------------------


def test_manifest_bound_is_exact() -> None:
    bound = MANIFEST.bound
    assert MANIFEST.id == "skills" and MANIFEST.config_model is SkillsConfig
    assert bound.tool_ids == {SKILL_TOOL, RESOURCE_TOOL, SCRIPT_TOOL}
    assert bound.state_keys == {StateKeyDecl(key=ACTIVE_SKILLS.key, scope=ACTIVE_SKILLS.scope)}
    assert bound.phase_hooks == {PhaseHookPoint.BEFORE_INFERENCE}
    assert bound.context_bands == {Band.SYSTEM, Band.SESSION}
    assert bound.narrows_tools
    assert not (bound.tool_gates or bound.tool_observers or bound.run_end_guards)
    assert not bound.dynamic_tools


def test_contributions_follow_config(tmp_path) -> None:
    plugin = SkillsPlugin()
    off = plugin.resolve(SkillsConfig(paths=[str(tmp_path)], packs=False))
    on = plugin.resolve({"paths": [str(tmp_path)], "packs": False, "enable_scripts": True})
    assert [t.descriptor.id for t in off.tools] == [SKILL_TOOL, RESOURCE_TOOL]
    assert [t.descriptor.id for t in on.tools] == [SKILL_TOOL, RESOURCE_TOOL, SCRIPT_TOOL]
    assert list(off.phase_hooks) == [PhaseHookPoint.BEFORE_INFERENCE]


def _runtime(plugin_config):
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="p", model="x"))
        .with_provider("p", ScriptedExecutor(["ok"]))
        .with_plugin(SkillsPlugin())
        .with_agent_spec(
            AgentConfig(
                id="a", model_binding="m", plugin_ids=["skills"], plugin_config=plugin_config
            )
        )
        .build()
    )


def test_bad_config_names_plugin_and_field() -> None:
    runtime = _runtime({"skills": {"catalog_max_entries": 0, "bogus": 1}})
    with pytest.raises(AgentConfigError) as info:
        runtime.resolve("a")
    message = str(info.value)
    assert "'skills'" in message and "catalog_max_entries" in message and "bogus" in message


def test_duplicate_names_fail_resolution(tmp_path, skill_factory) -> None:
    from awaken_ext_skills import DuplicateSkillError

    skill_factory(tmp_path / "a", "same")
    skill_factory(tmp_path / "b", "same")
    runtime = _runtime(
        {"skills": {"paths": [str(tmp_path / "a"), str(tmp_path / "b")], "packs": False}}
    )
    with pytest.raises(DuplicateSkillError, match="'same' is defined twice"):
        runtime.resolve("a")


def test_plugin_level_paths(tmp_path, skill_factory) -> None:
    skill_factory(tmp_path, "shared")
    plugin = SkillsPlugin(paths=[tmp_path])
    assert "shared" in plugin.registry(SkillsConfig(packs=False))
