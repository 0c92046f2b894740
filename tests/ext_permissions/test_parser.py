"""The compact rule language: valid forms, invalid forms with positions, config validation."""

from __future__ import annotations

from typing import Any

import pytest

from awaken_ext_permissions import (
    Behavior,
    Operator,
    PermissionsConfig,
    RuleSyntaxError,
    Segment,
    ToolKind,
    make_condition,
    parse_condition,
    parse_path,
    parse_rule,
    parse_rule_line,
)
from awaken_runtime import AgentConfigError


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("read_file", "read_file"),
        ("  read_file  ", "read_file"),
        ("read_file()", "read_file"),
        ('write_file(path ~ "src/**")', 'write_file(path ~ "src/**")'),
        ("shell(command ~ 'git status*')", 'shell(command ~ "git status*")'),
        ("mcp_github_*", "mcp_github_*"),
        ("/^mcp_(github|gitlab)_/", "/^mcp_(github|gitlab)_/"),
        (r"/a\/b/", "/a/b/"),
        (
            't(a.b = 1, c[0] != true and d[*] in [1, "x", null] && e < -2.5)',
            't(a.b = 1, c[0] != true, d[*] in [1, "x", null], e < -2.5)',
        ),
        ("t(x =~ /^a\\d+$/)", 't(x =~ "^a\\\\d+$")'),
        ('t(x !=~ "b", y !~ "*.env", z > 10)', 't(x !=~ "b", y !~ "*.env", z > 10)'),
        ('t(["odd key"] = "v")', 't(["odd key"] = "v")'),
        ('t(items[*].name = "a")', 't(items[*].name = "a")'),
        ('t(x = "quote \\" and \\u00e9")', 't(x = "quote \\" and \\u00e9")'),
    ],
)
def test_valid_rules_round_trip_to_canonical_text(text: str, canonical: str) -> None:
    assert parse_rule(text, "allow").pattern_text == canonical


def test_parsed_model() -> None:
    rule = parse_rule('write_file(path ~ "src/**", mode in ["w", "a"])', Behavior.ASK, 3)
    assert rule.tool == "write_file" and rule.kind is ToolKind.EXACT
    assert rule.behavior is Behavior.ASK and rule.index == 3
    assert [c.op for c in rule.when] == [Operator.GLOB, Operator.IN]
    assert rule.when[1].value == ["w", "a"]
    assert parse_rule("mcp_*", "deny").kind is ToolKind.GLOB
    assert parse_rule("/x/", "deny").kind is ToolKind.REGEX
    assert parse_path("a.b[2][*]") == (Segment("a"), Segment("b"), Segment(2), Segment(None))


def test_rule_lines_carry_their_behavior() -> None:
    rule = parse_rule_line('deny shell(command ~ "rm *")')
    assert rule.behavior is Behavior.DENY
    assert rule.text == 'deny shell(command ~ "rm *")'
    with pytest.raises(RuleSyntaxError) as err:
        parse_rule_line("permit shell")
    assert err.value.position == 1 and "allow, deny or ask" in err.value.message


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ('x(a ~~ "b")', 5, "unknown operator '~~'"),
        ("x(a == 1)", 5, "unknown operator '=='"),
        ("x(a >= 1)", 5, "unknown operator '>='"),
        ("x(a ~ 1)", 7, "operator '~' needs a string pattern"),
        ('x(a =~ "(")', 9, "bad regex"),
        ("x(a =~ /[/)", 9, "bad regex"),
        ("/(/", 2, "bad regex"),
        ("/abc", 1, "unterminated /regex/"),
        ('x(a.b = "s)', 9, "unterminated string"),
        ("x(a[ = 1)", 4, "expected an index"),
        ("x(a.= 1)", 5, "expected an argument name"),
        ("x(.a = 1)", 3, "expected an argument name"),
        ("x(= 1)", 3, "expected an argument name"),
        ("x(a 1)", 5, "expected an operator"),
        ("x(a = )", 7, "expected a value"),
        ("x(a = 1", 8, "expected ',', 'and' or ')'"),
        ("x(a = 1 b = 2)", 9, "expected ',', 'and' or ')'"),
        ("x(a = 1) y", 10, "unexpected 'y'"),
        ("x(a in 1)", 8, "needs a [list]"),
        ('x(a < "3")', 7, "needs a number"),
        ("x(a = [1, 2)", 12, "',' or ']'"),
        ("(a = 1)", 1, "expected a tool id"),
        ("", 1, "expected a tool id"),
        ('x(a = "\\q")', 8, "bad string escape"),
    ],
)
def test_invalid_rules_name_the_text_and_position(text: str, position: int, message: str) -> None:
    with pytest.raises(RuleSyntaxError) as err:
        parse_rule(text, "deny")
    assert err.value.position == position, str(err.value)
    assert message in err.value.message
    assert f"invalid rule {text!r} at position {position}" in str(err.value)


def test_conditions_and_object_form() -> None:
    assert parse_condition("a.b ~ 'x*'").text == 'a.b ~ "x*"'
    condition = make_condition("items[*]", "in", [1, 2])
    assert condition.op is Operator.IN and condition.has_wildcard
    with pytest.raises(RuleSyntaxError, match="unknown operator 'like'"):
        make_condition("a", "like", "x")
    with pytest.raises(RuleSyntaxError, match="bad regex"):
        make_condition("a", "=~", "(")
    with pytest.raises(RuleSyntaxError, match="expected an index"):
        make_condition("a[x]", "=", 1)


def test_config_accepts_every_form() -> None:
    config = PermissionsConfig.model_validate(
        {
            "rules": [
                {
                    "tool": "write_file",
                    "when": [{"path": "path", "op": "~", "value": "src/**"}],
                    "behavior": "allow",
                },
                {
                    "tool": 'shell(command ~ "git *")',
                    "when": ["command !~ '*;*'"],
                    "behavior": "allow",
                },
                "deny delete_all",
            ],
            "deny": ["mcp_*"],
            "ask": ["/^net_/"],
            "allow": ["read_file"],
            "default": "deny",
        }
    )
    texts = [r.text for r in config.compiled_rules()]
    assert texts == [
        'allow write_file(path ~ "src/**")',
        'allow shell(command ~ "git *", command !~ "*;*")',
        "deny delete_all",
        "deny mcp_*",
        "ask /^net_/",
        "allow read_file",
    ]
    assert [r.index for r in config.compiled_rules()] == list(range(6))


@pytest.mark.parametrize(
    ("config", "field", "snippet"),
    [
        (
            {"deny": ["ok", 'shell(command ~~ "x")']},
            "deny.1",
            "invalid rule 'shell(command ~~ \"x\")' at position 15: unknown operator '~~'",
        ),
        (
            {"rules": [{"tool": "t", "when": ["a =~ '('"], "behavior": "allow"}]},
            "rules.0",
            "at position 7: bad regex",
        ),
        ({"rules": ["maybe t"]}, "rules.0", "at position 1"),
        (
            {
                "rules": [
                    {
                        "tool": "t",
                        "when": [{"path": "a..b", "op": "=", "value": 1}],
                        "behavior": "ask",
                    }
                ]
            },
            "rules.0",
            "invalid rule 'a..b' at position 3",
        ),
    ],
)
def test_bad_rules_fail_agent_resolution(
    rig: Any, config: dict[str, Any], field: str, snippet: str
) -> None:
    runtime = rig.build(["unused"], config)
    with pytest.raises(AgentConfigError) as err:
        runtime.resolve("agent")
    text = str(err.value)
    assert "plugin 'permissions'" in text and field in text and snippet in text, text


def test_unknown_option_and_behavior_are_config_errors(rig: Any) -> None:
    with pytest.raises(AgentConfigError, match="on_deny"):
        rig.build(["unused"], {"on_deny": "explode"}).resolve("agent")
    with pytest.raises(AgentConfigError, match="default"):
        rig.build(["unused"], {"default": "maybe"}).resolve("agent")
