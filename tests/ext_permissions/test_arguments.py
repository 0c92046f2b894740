"""Shell splitting, path normalization and what ``explain`` says about them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_permissions import explain, normalize_path, split_shell


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("git status", ["git status"]),
        ("git status; rm -rf ~", ["git status", "rm -rf ~"]),
        ("a && b || c | d & e", ["a", "b", "c", "d", "e"]),
        ("a\nb", ["a", "b"]),
        ("echo $(rm -rf /)", ["echo $(rm -rf /)", "rm -rf /"]),
        ("echo `id`", ["echo `id`", "id"]),
        ("(cd x; rm y)", ["cd x", "rm y"]),
        ("diff <(curl x) y", ["diff <(curl x) y", "curl x"]),
        ("if a; then b; else c; fi", ["a", "b", "c"]),
        ("for i in 1; do rm $i; done", ["rm $i"]),
        ("f() { rm x; }; f", ["rm x", "f"]),
        ("X=$(curl x) make", ["X=$(curl x) make", "make", "curl x"]),
    ],
)
def test_split_shell_finds_every_simple_command(command: str, parts: list[str]) -> None:
    assert split_shell(command) == parts


@pytest.mark.parametrize("command", ["git status 'open", "a &&", "(a", "a; )", "$(", "a |"])
def test_split_shell_refuses_what_it_cannot_parse(command: str) -> None:
    with pytest.raises(ValueError, match=r"cannot parse|no simple command"):
        split_shell(command)


@pytest.mark.parametrize(
    ("path", "norm"),
    [
        ("src/./secrets/key", "src/secrets/key"),
        ("src/../src/secrets/key", "src/secrets/key"),
        ("src//secrets///key", "src/secrets/key"),
        ("src/secrets/", "src/secrets"),
        ("//etc/passwd", "/etc/passwd"),
        ("./a", "a"),
        ("../a", "../a"),
    ],
)
def test_normalize_path(path: str, norm: str) -> None:
    assert normalize_path(path) == norm


def test_a_root_resolves_symlinks_and_refuses_escapes(tmp_path: Path) -> None:
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo" / "link").symlink_to(tmp_path / "repo" / "src")
    (tmp_path / "repo" / "out").symlink_to(tmp_path)
    root = str(tmp_path / "repo")
    assert normalize_path("link/secrets/key", root) == "src/secrets/key"
    assert normalize_path(str(tmp_path / "repo" / "src" / "a"), root) == "src/a"
    assert normalize_path("out/x", root) is None
    assert normalize_path("../repo2/x", root) is None


SHELL: dict[str, Any] = {
    "allow": ['shell(command ~ "git *")'],
    "deny": ['shell(command ~ "rm *")'],
    "default": "ask",
    "shell_arguments": {"shell": ["command"]},
    "path_arguments": {"write_file": ["path"]},
}


def test_explain_names_the_part_that_decided() -> None:
    verdict = explain(SHELL, "shell", {"command": "git log && rm -rf ~"})
    assert verdict.behavior.value == "deny" and verdict.rule_text == 'deny shell(command ~ "rm *")'
    assert verdict.detail == "part 'rm -rf ~' of command"
    verdict = explain(SHELL, "shell", {"command": "git log | curl x"})
    assert verdict.behavior.value == "ask" and verdict.source == "default"
    assert "part 'curl x' of command" in verdict.describe()


def test_explain_names_the_normalized_path() -> None:
    config = {**SHELL, "deny": ['write_file(path ~ "src/secrets/*")']}
    verdict = explain(config, "write_file", {"path": "src/./secrets/key"})
    assert verdict.behavior.value == "deny"
    assert verdict.detail == "path path='src/secrets/key' (normalized from 'src/./secrets/key')"


def test_undeclared_arguments_fail_closed_unless_declared_text() -> None:
    # Undeclared, the allow cannot vouch for a second command: the default decides.
    config: dict[str, Any] = {"allow": ['shell(command ~ "git *")'], "default": "deny"}
    verdict = explain(config, "shell", {"command": "git x; rm -rf ~"})
    assert (verdict.behavior.value, verdict.source) == ("deny", "default")
    assert explain(config, "shell", {"command": "git x"}).behavior.value == "allow"
    # Declared plain text, the argument is matched as written (the old behaviour, opted in).
    config["text_arguments"] = {"shell": ["command"]}
    assert explain(config, "shell", {"command": "git x; rm -rf ~"}).behavior.value == "allow"


_TOKENS = ["rm x", "ls", "a", " ", ";", "&&", "||", "|", "&", "(", ")", "$(", "`", "'", '"']
_TOKENS += ["\\", "\n", "<", ">", "<<", "{", "}", "#", "!", "*", "=", "<(", "if ", "then "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=12).map("".join))
def test_split_shell_either_splits_or_refuses_any_text(command: str) -> None:
    # Whatever the model sends: a list of parts, or a ValueError (asked, never guessed).
    try:
        parts = split_shell(command)
    except ValueError:
        return
    assert parts and all(isinstance(p, str) for p in parts)
    verdict = explain({**SHELL, "default": "allow"}, "shell", {"command": command})
    if any(p.startswith("rm ") for p in parts):  # `rm *` is denied in SHELL
        assert verdict.behavior.value == "deny"
