"""A skill pack installed as a real distribution (dist-info + entry point) is found
without any configuration."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest

from awaken_ext_skills import SkillRegistry, SkillWarning
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    ScriptedExecutor,
    ScriptedTurn,
    discover,
)


def _install(site: Path, dist: str, module: str, hook_body: str) -> None:
    package = site / module
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "awaken_hooks.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            from awaken_runtime.hookspecs import hookimpl

            PACK = Path(__file__).parent / "skills"


            @hookimpl
            def register_skills(register):
            """
        )
        + textwrap.indent(textwrap.dedent(hook_body).strip(), "    ")
        + "\n"
    )
    info = site / f"{dist.replace('-', '_')}-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0.0\n")
    (info / "entry_points.txt").write_text(f"[awaken]\n{dist} = {module}.awaken_hooks\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    yield site
    monkeypatch.undo()
    discover(refresh=True)


async def test_pack_is_discovered_without_configuration(site: Path, skill_factory) -> None:
    module = f"acme_pack_{uuid.uuid4().hex[:8]}"
    _install(site, "acme-skills", module, "register(PACK)")
    skill_factory(site / module / "skills", "acme-report", description="Writes ACME reports.")
    discover(refresh=True)

    executor = ScriptedExecutor([ScriptedTurn.call("skill", {"name": "acme-report"}), "done"])
    runtime = (
        AgentRuntimeBuilder()  # discovery on: the skills plugin comes from its entry point too
        .with_model(ModelSpec(id="m", provider="scripted-test", model="x"))
        .with_provider("scripted-test", executor)
        .with_agent_spec(AgentConfig(id="a", model_binding="m", plugin_ids=["skills"]))
        .build()
    )
    state = await runtime.run("a", "make a report", thread_id="t")
    system = executor.requests[0].messages[0].text
    assert '<skill name="acme-report">Writes ACME reports.</skill>' in system
    result = next(m for m in state.new_messages if m.role == "tool")
    assert json.loads(result.text)["active"] is True

    registry = SkillRegistry()
    skill = registry.get("acme-report")
    assert skill is not None
    assert "distribution 'acme-skills'" in skill.source


async def test_pack_with_invalid_value_is_a_warning(site: Path) -> None:
    module = f"bad_pack_{uuid.uuid4().hex[:8]}"
    _install(site, "bad-skills", module, "register(42)")
    discover(refresh=True)
    registry = SkillRegistry()
    with pytest.warns(SkillWarning, match="needs a filesystem path"):
        registry.refresh()
    assert any("bad-skills" in p.source for p in registry.problems)


async def test_packs_can_be_turned_off(site: Path, skill_factory) -> None:
    module = f"off_pack_{uuid.uuid4().hex[:8]}"
    _install(site, "off-skills", module, "register(str(PACK))")
    skill_factory(site / module / "skills", "hidden-skill")
    discover(refresh=True)
    assert "hidden-skill" in SkillRegistry()
    assert "hidden-skill" not in SkillRegistry(packs=False)
