"""explain() names the part of a command, the normalized path and the level that decided."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_ext_permissions import PermissionsConfig, explain

DECLARED: dict[str, Any] = {
    "shell_arguments": {"shell": ["command"]},
    "path_arguments": {"write_file": ["path"]},
}
ROOT: dict[str, Any] = {
    "deny": ['shell(command ~ "rm *")', 'write_file(path ~ "src/secrets/*")'],
    "allow": ["agent_run"],
    "default": "allow",
    **DECLARED,
}
MIDDLE: dict[str, Any] = {"ask": ['shell(command ~ "curl *")'], "default": "allow", **DECLARED}
CHILD: dict[str, Any] = {"allow": ["shell", "write_file"], "default": "allow", **DECLARED}


def test_the_root_deny_decides_for_a_grandchild_and_says_so() -> None:
    verdict = explain(CHILD, "shell", {"command": "git log && rm -rf ~"}, inherited=[ROOT, MIDDLE])
    assert verdict.behavior.value == "deny"
    assert (verdict.level, verdict.levels) == (0, 3)
    assert verdict.detail == "part 'rm -rf ~' of command"
    assert verdict.describe() == (
        "rule 'deny shell(command ~ \"rm *\")' (on part 'rm -rf ~' of command), "
        "at level 0 of 3 (the policy inherited from 2 levels up)"
    )


def test_the_middle_ask_beats_the_childs_allow() -> None:
    verdict = explain(CHILD, "shell", {"command": "ls | curl x"}, inherited=[ROOT, MIDDLE])
    assert verdict.behavior.value == "ask" and verdict.level == 1
    assert verdict.describe().endswith("at level 1 of 3 (the policy inherited from 1 level up)")


def test_a_normalized_path_and_its_level() -> None:
    verdict = explain(CHILD, "write_file", {"path": "src/./secrets//key"}, inherited=[ROOT])
    assert verdict.behavior.value == "deny" and verdict.level == 0
    assert verdict.detail == "path path='src/secrets/key' (normalized from 'src/./secrets//key')"


def test_the_childs_own_deny_is_its_own_level() -> None:
    child = {**CHILD, "deny": ['shell(command ~ "git push*")']}
    verdict = explain(child, "shell", {"command": "git push -f"}, inherited=[ROOT, MIDDLE])
    assert verdict.behavior.value == "deny" and verdict.level == 2
    assert verdict.describe().endswith("(its own policy)")


def test_on_a_tie_the_nearest_level_names_the_rule() -> None:
    child = {**CHILD, "deny": ['shell(command ~ "rm -rf*")']}
    verdict = explain(child, "shell", {"command": "rm -rf ~"}, inherited=[ROOT])
    assert verdict.level == 1 and verdict.rule_text == 'deny shell(command ~ "rm -rf*")'


def test_an_ancestor_that_does_not_pass_its_policy_down_is_skipped() -> None:
    middle = {**MIDDLE, "inherit": False}
    verdict = explain(CHILD, "shell", {"command": "curl x"}, inherited=[ROOT, middle])
    assert verdict.behavior.value == "allow" and verdict.level == 2
    # ... but the root's still reaches the grandchild
    assert explain(CHILD, "shell", {"command": "rm x"}, inherited=[ROOT, middle]).level == 0


@pytest.mark.parametrize("config", [CHILD, PermissionsConfig.model_validate(CHILD)])
def test_alone_there_is_no_level(config: Any) -> None:
    verdict = explain(config, "shell", {"command": "rm x"})
    assert verdict.level is None and "level" not in verdict.describe()


def test_an_unparsable_command_is_described_once() -> None:
    verdict = explain(CHILD, "shell", {"command": "git status 'open"})
    assert verdict.source == "argument"
    assert verdict.describe().count("cannot parse") == 1
