"""Declared paths: case-insensitive filesystems, and paths that leave the root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awaken_ext_permissions import explain, normalize_path

INSENSITIVE: dict[str, Any] = {
    "allow": ['write_file(path ~ "src/*")', 'write_file(path =~ "^docs/[a-z]+\\\\.md$")'],
    "deny": ['write_file(path ~ "src/Secrets/*")', 'write_file(path in ["src/.ENV"])'],
    "default": "ask",
    "path_arguments": {"write_file": ["path"]},
    "path_case_insensitive": True,
}


@pytest.mark.parametrize(
    "path",
    ["src/secrets/key", "SRC/SECRETS/key", "src/./Secrets//KEY", "Src/sEcReTs/x/", "src/.env"],
)
def test_case_does_not_hide_a_denied_path(path: str) -> None:
    verdict = explain(INSENSITIVE, "write_file", {"path": path})
    assert verdict.behavior.value == "deny", (path, verdict)
    assert verdict.rule is not None and verdict.rule.text in (
        'deny write_file(path ~ "src/Secrets/*")',  # named as written, not folded
        'deny write_file(path in ["src/.ENV"])',
    )


def test_allows_and_regexes_ignore_case_too() -> None:
    assert explain(INSENSITIVE, "write_file", {"path": "SRC/a.py"}).behavior.value == "allow"
    assert explain(INSENSITIVE, "write_file", {"path": "Docs/README.MD"}).behavior.value == "allow"
    assert explain(INSENSITIVE, "write_file", {"path": "etc/x"}).behavior.value == "ask"


def test_case_sensitive_by_default() -> None:
    sensitive = {**INSENSITIVE, "path_case_insensitive": False}
    assert explain(sensitive, "write_file", {"path": "SRC/Secrets/k"}).behavior.value == "ask"
    assert explain(sensitive, "write_file", {"path": "src/Secrets/k"}).behavior.value == "deny"


def test_undeclared_arguments_keep_their_case() -> None:
    config = {**INSENSITIVE, "deny": ['fetch(path ~ "*Admin*")']}
    assert explain(config, "fetch", {"path": "/Admin/x"}).behavior.value == "deny"
    assert explain(config, "fetch", {"path": "/admin/x"}).behavior.value == "ask"


def test_a_root_compared_without_case(tmp_path: Path) -> None:
    (tmp_path / "Repo" / "src").mkdir(parents=True)
    root = str(tmp_path / "Repo")
    assert normalize_path(str(tmp_path / "Repo" / "src" / "A.py"), root, True) == "src/a.py"
    assert normalize_path(root.upper() + "/src/a", root, True) == "src/a"
    assert normalize_path(root.upper() + "/src/a", root, False) is None
    assert normalize_path("../Repo2/x", root, True) is None
    assert normalize_path(".", root, True) == "."


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "src/../../x", "out/x", "./../Repo2"])
def test_paths_that_leave_the_root_are_denied_whatever_allows(tmp_path: Path, path: str) -> None:
    (tmp_path / "Repo" / "src").mkdir(parents=True)
    (tmp_path / "Repo" / "out").symlink_to(tmp_path)
    config = {
        "allow": ["write_file"],
        "default": "allow",
        "path_arguments": {"write_file": ["path"]},
        "path_root": str(tmp_path / "Repo"),
    }
    for insensitive in (False, True):
        verdict = explain(
            {**config, "path_case_insensitive": insensitive}, "write_file", {"path": path}
        )
        assert verdict.behavior.value == "deny" and verdict.source == "argument", verdict
        assert "outside the root" in verdict.describe()
