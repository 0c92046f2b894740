"""SKILL.md parsing and every frontmatter validation rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from awaken_ext_skills import InvalidSkillError, SkillArgument, load_skill

FULL = """---
name: pdf-forms
description: Fill in PDF forms.
allowed-tools: read_pdf  write_pdf
when-to-use: The user hands over a PDF form.
arguments:
  - name: form
    description: Path of the form.
    required: true
  - name: lang
    description: Output language.
license: MIT
metadata:
  author: acme
  version: "1.2"
x-unknown-key: ignored
---

# Filling forms

Fill ${form} in ${lang}; keep ${other} as is.
"""


def _invalid(folder: Path) -> str:
    with pytest.raises(InvalidSkillError) as info:
        load_skill(folder)
    assert info.value.problem.path in (folder.resolve() / "SKILL.md", folder.resolve())
    return info.value.problem.reason


def test_full_frontmatter(tmp_path: Path, skill_factory) -> None:
    folder = skill_factory(tmp_path, "pdf-forms", raw=FULL)
    skill = load_skill(folder, source="test")
    assert skill.name == "pdf-forms"
    assert skill.description == "Fill in PDF forms."
    assert skill.allowed_tools == ("read_pdf", "write_pdf")
    assert skill.when_to_use == "The user hands over a PDF form."
    assert skill.arguments == (
        SkillArgument("form", "Path of the form.", True),
        SkillArgument("lang", "Output language.", False),
    )
    assert skill.license == "MIT"
    assert dict(skill.metadata) == {"author": "acme", "version": "1.2"}
    assert skill.body.startswith("# Filling forms")
    assert skill.root == folder.resolve()
    assert skill.source == "test"
    assert len(skill.fingerprint) == 32


def test_minimal_and_optional_defaults(tmp_path: Path, skill_factory) -> None:
    skill = load_skill(skill_factory(tmp_path, "a1", description="x"))
    assert skill.allowed_tools == ()
    assert skill.arguments == ()
    assert skill.when_to_use is None and skill.license is None
    assert dict(skill.metadata) == {}


def test_allowed_tools_as_list_and_dedup(tmp_path: Path, skill_factory) -> None:
    folder = skill_factory(tmp_path, "t", frontmatter="allowed-tools: [a, b.c, a]\n")
    assert load_skill(folder).allowed_tools == ("a", "b.c")


@pytest.mark.parametrize(
    ("written", "ids"),
    [
        ("Read, Grep", ("Read", "Grep")),  # Claude Code
        ("Read, Grep, Glob", ("Read", "Grep", "Glob")),
        ("Read Grep Glob", ("Read", "Grep", "Glob")),  # Agent Skills
        ("Read,Grep ,  Glob,", ("Read", "Grep", "Glob")),
        ("'Read\tGrep\n  Glob'", ("Read", "Grep", "Glob")),
        ("['Read, Grep', Glob]", ("Read", "Grep", "Glob")),
        ("mcp__github__search, Read, Read", ("mcp__github__search", "Read")),
    ],
)
def test_allowed_tools_formats(tmp_path: Path, skill_factory, written: str, ids) -> None:
    folder = skill_factory(tmp_path, "t", frontmatter=f"allowed-tools: {written}\n")
    skill = load_skill(folder)
    assert skill.allowed_tools == ids
    assert skill.notes == ()


def test_allowed_tools_argument_patterns_name_their_tool(tmp_path: Path, skill_factory) -> None:
    header = "allowed-tools: Bash(git status:*), Bash(git diff:*) Read\n"
    skill = load_skill(skill_factory(tmp_path, "t", frontmatter=header))
    assert skill.allowed_tools == ("Bash", "Read")
    (note,) = skill.notes
    assert "'Bash(git status:*)'" in note and "not enforced" in note


def test_long_description_loads_with_a_note(tmp_path: Path, skill_factory) -> None:
    long = "Extract text and tables from PDF files. " * 28  # 1,120 characters
    skill = load_skill(skill_factory(tmp_path, "pdf", description=long))
    assert len(long.strip()) == 1119
    assert skill.description == long.strip()  # kept in full; the catalog cuts it
    (note,) = skill.notes
    assert "'description' is 1119 characters" in note and "first 1024" in note


def test_bom_and_crlf(tmp_path: Path, skill_factory) -> None:
    raw = "\ufeff---\r\nname: crlf\r\ndescription: d\r\n---\r\nbody\r\n"
    folder = skill_factory(tmp_path, "crlf", raw=raw.encode("utf-8"))
    assert load_skill(folder).body.strip() == "body"


def test_fingerprint_follows_content(tmp_path: Path, skill_factory) -> None:
    a = load_skill(skill_factory(tmp_path / "1", "s", body="one"))
    b = load_skill(skill_factory(tmp_path / "2", "s", body="one"))
    c = load_skill(skill_factory(tmp_path / "3", "s", body="two"))
    assert a.fingerprint == b.fingerprint != c.fingerprint


def test_boundaries_accepted(tmp_path: Path, skill_factory) -> None:
    name = "a" * 64
    folder = skill_factory(tmp_path, name, description="d" * 1024)
    assert load_skill(folder).name == name
    assert load_skill(skill_factory(tmp_path, "a-1-b2")).name == "a-1-b2"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Upper", "lowercase"),
        ("double--hyphen", "single hyphens"),
        ("-lead", "single hyphens"),
        ("trail-", "single hyphens"),
        ("under_score", "lowercase"),
        ("sp ace", "lowercase"),
        ("a" * 65, "at most 64"),
    ],
)
def test_bad_names(tmp_path: Path, skill_factory, name: str, reason: str) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: '{name}'\ndescription: d\n---\n")
    assert reason in _invalid(folder)


def test_name_must_match_folder(tmp_path: Path, skill_factory) -> None:
    folder = skill_factory(tmp_path, "folder", raw="---\nname: other\ndescription: d\n---\n")
    reason = _invalid(folder)
    assert "'other'" in reason and "'folder'" in reason


def test_name_must_be_string(tmp_path: Path, skill_factory) -> None:
    folder = skill_factory(tmp_path, "123", raw="---\nname: 123\ndescription: d\n---\n")
    assert "'name'" in _invalid(folder)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("description: d\n", "missing required key 'name'"),
        ("name: s\n", "missing required key 'description'"),
        ("name: s\ndescription: ''\n", "must not be empty"),
        ("name: s\ndescription: '   '\n", "must not be empty"),
        ("name: s\ndescription: [a]\n", "'description'"),
        (f"name: s\ndescription: {'d' * 65537}\n", "at most 65536"),
        (f"name: s\ndescription: d\nwhen-to-use: {'w' * 65537}\n", "at most 65536"),
        ("name: s\ndescription: d\nwhen-to-use: 3\n", "'when-to-use'"),
        ("name: s\ndescription: d\nallowed-tools: 'ok bad/tool'\n", "'bad/tool' is not"),
        ("name: s\ndescription: d\nallowed-tools: 5\n", "'allowed-tools'"),
        ("name: s\ndescription: d\nallowed-tools: 'Read, Bash(git'\n", "'(' is not"),
        ("name: s\ndescription: d\nallowed-tools: [Read, 'a;b']\n", "'a;b' is not"),
        ("name: s\ndescription: d\narguments: x\n", "'arguments'"),
        ("name: s\ndescription: d\narguments:\n  - description: no name\n", "'arguments.0.name'"),
        ("name: s\ndescription: d\narguments:\n  - name: 1bad\n", "argument names"),
        ("name: s\ndescription: d\narguments:\n  - name: a\n    required: maybe\n", "required"),
        ("name: s\ndescription: d\narguments:\n  - name: a\n  - name: a\n", "declared twice"),
        ("name: s\ndescription: d\nlicense: [MIT]\n", "'license'"),
        ("name: s\ndescription: d\nmetadata: [a]\n", "'metadata'"),
        ("name: s\ndescription: d\nmetadata:\n  version: 1.0\n", "'metadata.version'"),
    ],
)
def test_frontmatter_rules(tmp_path: Path, skill_factory, header: str, reason: str) -> None:
    folder = skill_factory(tmp_path, "s", raw=f"---\n{header}---\nbody\n")
    assert reason in _invalid(folder)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("no frontmatter here", "must start with a '---' line"),
        ("---\nname: s\ndescription: d\n", "not closed"),
        ("---\nname: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\n---\nbody", "missing required key 'name'"),
    ],
)
def test_file_structure(tmp_path: Path, skill_factory, raw: str, reason: str) -> None:
    assert reason in _invalid(skill_factory(tmp_path, "s", raw=raw))


def test_not_utf8(tmp_path: Path, skill_factory) -> None:
    folder = skill_factory(tmp_path, "s", raw=b"---\nname: s\ndescription: \xff\xfe\n---\n")
    assert "not UTF-8" in _invalid(folder)


def test_missing_skill_md(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    assert "no SKILL.md" in _invalid(tmp_path / "s")


def test_skill_md_too_large(tmp_path: Path, skill_factory) -> None:
    folder = skill_factory(tmp_path, "s", body="x" * (300 * 1024))
    assert "at most" in _invalid(folder)


def test_skill_md_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "s" / "SKILL.md").mkdir(parents=True)
    assert "not a regular file" in _invalid(tmp_path / "s")


# -- arguments and substitution ---------------------------------------------


def test_bind_and_render(tmp_path: Path, skill_factory) -> None:
    skill = load_skill(skill_factory(tmp_path, "pdf-forms", raw=FULL))
    bound = skill.bind_arguments({"form": "a.pdf"})
    assert bound == {"form": "a.pdf"}
    text = skill.render(bound)
    assert "Fill a.pdf in ;" in text  # optional, not given: empty
    assert "${other}" in text  # undeclared placeholder untouched
    assert skill.render(skill.bind_arguments({"form": 7, "lang": True})).count("7 in true") == 1


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ({}, "missing required argument 'form'"),
        ({"form": None}, "missing required argument 'form'"),
        ({"form": "x", "nope": 1}, "unknown argument(s) 'nope'"),
        ({"form": ["x"]}, "must be a string, number or boolean"),
        ({"form": "x" * 5000}, "longer than"),
    ],
)
def test_bind_rejects(tmp_path: Path, skill_factory, given: dict, reason: str) -> None:
    skill = load_skill(skill_factory(tmp_path, "pdf-forms", raw=FULL))
    with pytest.raises(ValueError) as info:
        skill.bind_arguments(given)
    assert reason in str(info.value)


def test_render_without_arguments_keeps_body(tmp_path: Path, skill_factory) -> None:
    skill = load_skill(skill_factory(tmp_path, "s", body="cost: ${price}"))
    assert skill.render({}) == "cost: ${price}"
