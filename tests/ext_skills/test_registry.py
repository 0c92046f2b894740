"""Skill sources, caching, refresh, change detection, warnings and duplicates."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from awaken_ext_skills import (
    DuplicateSkillError,
    SkillRegistry,
    SkillsConfig,
    SkillsPlugin,
    SkillWarning,
)


def test_pack_folder_and_single_skill_folder(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path / "pack", "b-skill")
    skill_factory(tmp_path / "pack", "a-skill")
    single = skill_factory(tmp_path / "other", "solo")
    registry = SkillRegistry([tmp_path / "pack", single], packs=False)
    assert [s.name for s in registry] == ["a-skill", "b-skill", "solo"]
    assert "solo" in registry and len(registry) == 3
    assert registry.get("a-skill").source == f"path {str(tmp_path / 'pack')!r}"


def test_hidden_and_private_folders_are_skipped(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path, "ok")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "README.md").write_text("not a folder")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry = SkillRegistry([tmp_path], packs=False)
        assert [s.name for s in registry] == ["ok"]
    assert registry.problems == []


def test_invalid_skills_warn_and_are_left_out(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path, "good")
    bad = skill_factory(tmp_path, "bad", raw="---\nname: bad\n---\n")
    (tmp_path / "empty").mkdir()
    registry = SkillRegistry([tmp_path], packs=False)
    with pytest.warns(SkillWarning) as record:
        assert [s.name for s in registry] == ["good"]
    messages = [str(w.message) for w in record]
    assert any(str(bad.resolve() / "SKILL.md") in m and "'description'" in m for m in messages)
    assert any("no SKILL.md" in m for m in messages)
    assert {p.reason for p in registry.problems} >= {"the folder has no SKILL.md"}
    assert all(p.source for p in registry.problems)


def test_missing_source_is_a_warning(tmp_path: Path) -> None:
    registry = SkillRegistry([tmp_path / "nope"], packs=False)
    with pytest.warns(SkillWarning, match="does not exist"):
        assert len(registry) == 0


def test_duplicate_across_sources_names_both(tmp_path: Path, skill_factory) -> None:
    one = skill_factory(tmp_path / "one", "dup")
    two = skill_factory(tmp_path / "two", "dup")
    registry = SkillRegistry([tmp_path / "one", tmp_path / "two"], packs=False)
    with pytest.raises(DuplicateSkillError) as info:
        registry.refresh()
    message = str(info.value)
    assert str(one.resolve() / "SKILL.md") in message
    assert str(two.resolve() / "SKILL.md") in message
    assert info.value.name == "dup"


def test_same_folder_twice_is_not_a_duplicate(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path / "pack", "s")
    link = tmp_path / "alias"
    link.symlink_to(tmp_path / "pack")
    registry = SkillRegistry([tmp_path / "pack", link, tmp_path / "pack" / "s"], packs=False)
    assert [s.name for s in registry] == ["s"]


def test_discovery_is_cached_until_refresh(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path, "first")
    registry = SkillRegistry([tmp_path], packs=False)
    generation = registry.generation
    skill_factory(tmp_path, "second")
    assert [s.name for s in registry] == ["first"]
    assert registry.generation == generation
    registry.refresh()
    assert [s.name for s in registry] == ["first", "second"]
    assert registry.generation != generation


def test_refresh_with_duplicate_keeps_previous_state(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path / "a", "x")
    registry = SkillRegistry([tmp_path / "a", tmp_path / "b"], packs=False)
    with pytest.warns(SkillWarning):
        assert len(registry) == 1
    skill_factory(tmp_path / "b", "x")
    with pytest.raises(DuplicateSkillError):
        registry.refresh()
    assert [s.name for s in registry] == ["x"]


def test_programmatic_registration(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path / "a", "one")
    skill_factory(tmp_path / "b", "two")
    registry = SkillRegistry([tmp_path / "a"], packs=False)
    assert len(registry) == 1
    registry.add(tmp_path / "b", label="my app")
    assert [s.name for s in registry] == ["one", "two"]
    assert registry.get("two").source == "my app"
    assert [s.label for s in registry.sources] == [f"path {str(tmp_path / 'a')!r}", "my app"]


def test_plugin_register_reaches_existing_registries(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path / "a", "one")
    skill_factory(tmp_path / "b", "two")
    plugin = SkillsPlugin(paths=[tmp_path / "a"])
    registry = plugin.registry(SkillsConfig(packs=False))
    assert len(registry) == 1
    assert plugin.registry(SkillsConfig(packs=False)) is registry
    plugin.register(tmp_path / "b")
    assert [s.name for s in registry] == ["one", "two"]
    skill_factory(tmp_path / "b", "three")
    plugin.refresh()
    assert len(registry) == 3


def test_check_notices_changes(tmp_path: Path, skill_factory) -> None:
    skill_factory(tmp_path, "s", body="v1")
    registry = SkillRegistry([tmp_path], packs=False)
    before = registry.get("s")
    generation = registry.generation
    assert registry.check("s") is before  # unchanged: one stat, same object
    skill_factory(tmp_path, "s", body="version two")
    after = registry.check("s")
    assert after is not None and after.fingerprint != before.fingerprint
    assert registry.get("s") is after
    assert registry.generation != generation
    assert registry.check("missing") is None


def test_check_same_content_new_stamp_keeps_generation(tmp_path: Path, skill_factory) -> None:
    folder = skill_factory(tmp_path, "s", body="same")
    registry = SkillRegistry([tmp_path], packs=False)
    generation = registry.generation
    st = (folder / "SKILL.md").stat()
    os.utime(folder / "SKILL.md", ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert registry.check("s").fingerprint == registry.get("s").fingerprint
    assert registry.generation == generation


def test_check_drops_broken_or_deleted(tmp_path: Path, skill_factory) -> None:
    a = skill_factory(tmp_path, "a")
    skill_factory(tmp_path, "b")
    registry = SkillRegistry([tmp_path], packs=False)
    assert len(registry) == 2
    (a / "SKILL.md").write_text("garbage, no frontmatter at all")
    with pytest.warns(SkillWarning, match="must start with"):
        assert registry.check("a") is None
    assert "a" not in registry
    (tmp_path / "b" / "SKILL.md").unlink()
    with pytest.warns(SkillWarning, match="no SKILL.md"):
        assert registry.check("b") is None
    assert len(registry) == 0


def test_symlinked_skill_folder_keeps_its_link_name(tmp_path: Path, skill_factory) -> None:
    real = skill_factory(tmp_path / "store", "real-name")
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "real-name").symlink_to(real)
    registry = SkillRegistry([tmp_path / "pack"], packs=False)
    assert registry.get("real-name").root == real.resolve()
