"""load_skill_resource: text and binary resources, caps, and every path-escape attempt."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from awaken_ext_skills import PathRefused, SkillRegistry, confine, read_resource

LIMITS = {"max_text_bytes": 64, "max_asset_bytes": 16}


@pytest.fixture
def skill(tmp_path: Path, skill_factory):
    root = skill_factory(
        tmp_path / "skills",
        "docs",
        files={
            "references/guide.md": "# Guide\nhello",
            "references/deep/nested.txt": "nested",
            "references/long.txt": "é" * 100,  # 200 bytes
            "references/binary.bin": b"\xff\xfe\x00bad",
            "assets/logo.png": b"\x89PNG\r\n",
            "assets/blob": b"\x00\x01",
            "assets/big.bin": b"x" * 17,
            "scripts/run.py": "print(1)",
        },
    )
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    (root / "references" / "link-out").symlink_to(outside)
    (root / "references" / "link-in").symlink_to(root / "SKILL.md")
    (root / "assets" / "dir-out").symlink_to(tmp_path, target_is_directory=True)
    (root / "references" / "loop").symlink_to(root / "references" / "loop")
    return SkillRegistry([tmp_path / "skills"], packs=False).get("docs")


def test_reference_text(skill) -> None:
    data = read_resource(skill, "references/guide.md", **LIMITS)
    assert data == {
        "skill": "docs",
        "path": "references/guide.md",
        "size": 13,
        "kind": "reference",
        "encoding": "utf-8",
        "content": "# Guide\nhello",
        "truncated": False,
    }
    assert read_resource(skill, "references/deep/nested.txt", **LIMITS)["content"] == "nested"
    assert read_resource(skill, "./references/guide.md", **LIMITS)["truncated"] is False


def test_reference_truncated_on_a_character_boundary(skill) -> None:
    data = read_resource(skill, "references/long.txt", **LIMITS)
    assert data["truncated"] is True
    assert data["content"] == "é" * 32
    assert data["size"] == 200


def test_reference_must_be_utf8(skill) -> None:
    with pytest.raises(PathRefused) as info:
        read_resource(skill, "references/binary.bin", **LIMITS)
    assert info.value.code == "not_utf8"


def test_asset_base64_with_media_type(skill) -> None:
    data = read_resource(skill, "assets/logo.png", **LIMITS)
    assert data["kind"] == "asset" and data["encoding"] == "base64"
    assert data["media_type"] == "image/png"
    assert base64.b64decode(data["content"]) == b"\x89PNG\r\n"
    blob = read_resource(skill, "assets/blob", **LIMITS)
    assert blob["media_type"] == "application/octet-stream"


def test_asset_over_cap_is_refused(skill) -> None:
    with pytest.raises(PathRefused) as info:
        read_resource(skill, "assets/big.bin", **LIMITS)
    assert info.value.code == "too_large"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("references/missing.md", "not_found"),
        ("references/deep", "not_a_file"),
        ("SKILL.md", "not_allowed"),
        ("scripts/run.py", "not_allowed"),
        ("references", "not_allowed"),
        ("references/link-in", "not_allowed"),  # inside the skill, outside references/
        ("", "invalid_path"),
        ("   ", "invalid_path"),
        ("references/a\x00b", "invalid_path"),
    ],
)
def test_other_refusals(skill, path: str, code: str) -> None:
    with pytest.raises(PathRefused) as info:
        read_resource(skill, path, **LIMITS)
    assert info.value.code == code


def test_symlink_loop(skill) -> None:
    with pytest.raises(PathRefused) as info:
        read_resource(skill, "references/loop", **LIMITS)
    # Python 3.11/3.12 report the loop; 3.13 resolves it leniently to a missing file.
    assert info.value.code in ("invalid_path", "not_found")


ESCAPES = [
    "../secret.txt",
    "../../etc/passwd",
    "references/../../secret.txt",
    "references/../SKILL.md",
    "references/deep/../../../secret.txt",
    "/etc/passwd",
    "//etc/passwd",
    "references/link-out",
    "assets/dir-out/secret.txt",
    "%2e%2e/secret.txt",
    "%2E%2E%2Fsecret.txt",
    "references/%2e%2e/%2e%2e/secret.txt",
    "references%2f..%2f..%2fsecret.txt",
    "%252e%252e%252fsecret.txt",
    "..%2fsecret.txt",
    "%2fetc%2fpasswd",
    "references\\..\\..\\secret.txt",
    "..\\secret.txt",
    "references%5c..%5c..%5csecret.txt",
    "C:\\Windows\\win.ini",
    "C:/Windows/win.ini",
    "\\\\server\\share\\x",
    "references/..",
    "..",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_escapes_are_refused(skill, path: str) -> None:
    with pytest.raises(PathRefused) as info:
        read_resource(skill, path, **LIMITS)
    assert info.value.code == "path_escapes_root"


def test_absolute_path_into_the_skill_is_refused(skill) -> None:
    absolute = str(skill.root / "references" / "guide.md")
    with pytest.raises(PathRefused) as info:
        read_resource(skill, absolute, **LIMITS)
    assert info.value.code == "path_escapes_root"


def test_area_symlinked_out_of_the_skill(tmp_path: Path, skill_factory) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("outside")
    root = skill_factory(tmp_path / "s", "linked")
    (root / "references").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PathRefused) as info:
        confine(root, "references/x.md", ("references",))
    assert info.value.code == "path_escapes_root"


def test_default_area(tmp_path: Path, skill_factory) -> None:
    root = skill_factory(tmp_path, "s", files={"scripts/a.py": ""})
    expected = (root / "scripts" / "a.py").resolve()
    assert confine(root, "a.py", ("scripts",), default_area="scripts") == expected
    assert confine(root, "scripts/a.py", ("scripts",), default_area="scripts") == expected
    with pytest.raises(PathRefused) as info:
        confine(root, "/a.py", ("scripts",), default_area="scripts")
    assert info.value.code == "path_escapes_root"


# -- through the tool ------------------------------------------------------------


async def test_tool_loads_and_refuses(tmp_path, skill_factory, skills_rig, call_turn) -> None:
    skill_factory(tmp_path, "docs", files={"references/guide.md": "hello", "assets/a.gif": b"GIF"})
    (tmp_path / "secret.txt").write_text("no")
    rig = skills_rig(
        [
            call_turn("load_skill_resource", skill="docs", path="references/guide.md"),
            call_turn("skill", name="docs"),
            call_turn("load_skill_resource", skill="docs", path="references/guide.md"),
            call_turn("load_skill_resource", skill="docs", path="assets/a.gif"),
            call_turn("load_skill_resource", skill="docs", path="../secret.txt"),
            call_turn("load_skill_resource", skill="nope", path="references/guide.md"),
            "done",
        ],
        paths=[tmp_path],
        config={"max_reference_bytes": 3},
    )
    await rig.run(thread_id="t")
    results = rig.tool_results("t")
    payloads = [json.loads(m.text) for m in results]
    assert payloads[0]["error"] == "skill_not_active"
    assert payloads[2]["content"] == "hel" and payloads[2]["truncated"] is True
    assert payloads[3]["media_type"] == "image/gif"
    assert payloads[4]["error"] == "path_escapes_root"
    assert results[4].metadata.get("is_error") is True
    assert payloads[5]["error"] == "unknown_skill"
    assert "no" not in payloads[4]["message"].split()


@pytest.mark.parametrize(
    "path",
    [
        "references/" + "a" * 256,
        "references/" + "é" * 128,  # 256 bytes in 128 characters
        "references/" + "a" * 300 + "/x.md",
        "references/" + "/".join(["abcdefgh"] * 120),  # short parts, over 1,024 bytes
    ],
)
def test_over_long_paths_are_a_typed_refusal(skill, path: str) -> None:
    with pytest.raises(PathRefused) as info:
        read_resource(skill, path, **LIMITS)
    assert info.value.code == "invalid_path"
    assert "at most" in info.value.message
    assert str(skill.root) not in info.value.message


def test_longest_component_is_looked_up(skill) -> None:
    with pytest.raises(PathRefused) as info:
        read_resource(skill, "references/" + "a" * 255, **LIMITS)
    assert info.value.code == "not_found"


def test_unreadable_file_is_a_refusal_without_the_server_path(skill, monkeypatch) -> None:
    def denied(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))  # as open() does

    monkeypatch.setattr(Path, "open", denied)
    with pytest.raises(PathRefused) as info:
        read_resource(skill, "references/guide.md", **LIMITS)
    assert info.value.code == "unreadable"
    assert "Permission denied" in info.value.message
    assert str(skill.root) not in info.value.message
