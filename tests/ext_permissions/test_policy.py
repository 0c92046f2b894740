"""Evaluation: precedence, operators, tool matching, defaults, explain, and a property."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_permissions import (
    Behavior,
    PermissionsConfig,
    Policy,
    call_key,
    explain,
    parse_rule_line,
)
from awaken_ext_permissions._vouch import unnormal_path


def policy(*lines: str, default: str = "ask") -> Policy:
    return Policy([parse_rule_line(t, i) for i, t in enumerate(lines)], Behavior(default))


def decide(p: Policy, tool: str, /, **args: Any) -> str:
    return p.evaluate(tool, args).behavior.value


# (rules, tool, args, expected behavior, expected deciding rule text or None for default)
PRECEDENCE = [
    # any matching deny wins, however specific the allow
    (
        ['allow shell(command = "ls")', "deny shell"],
        "shell",
        {"command": "ls"},
        "deny",
        "deny shell",
    ),
    (["allow sh*", "deny /^sh/"], "shell", {}, "deny", "deny /^sh/"),
    # exact beats glob beats regex
    (["ask /^shell$/", "allow shell"], "shell", {}, "allow", "allow shell"),
    (["allow sh*", "ask shell"], "shell", {}, "ask", "ask shell"),
    (["allow sh*", "ask /^sh/"], "shell", {}, "allow", "allow sh*"),
    (["ask sh*", "allow /^sh/"], "shell", {}, "ask", "ask sh*"),
    # then more conditions
    (
        ["ask shell", 'allow shell(command ~ "git *")'],
        "shell",
        {"command": "git log"},
        "allow",
        'allow shell(command ~ "git *")',
    ),
    (
        ['allow shell(command ~ "git *")', 'ask shell(command ~ "git *", cwd = "/")'],
        "shell",
        {"command": "git log", "cwd": "/"},
        "ask",
        'ask shell(command ~ "git *", cwd = "/")',
    ),
    # then more precise operators: = beats ~ beats !=
    (
        ['ask shell(command ~ "git *")', 'allow shell(command = "git log")'],
        "shell",
        {"command": "git log"},
        "allow",
        'allow shell(command = "git log")',
    ),
    (
        ['allow shell(command != "x")', 'ask shell(command ~ "*")'],
        "shell",
        {"command": "y"},
        "ask",
        'ask shell(command ~ "*")',
    ),
    (
        ['allow shell(command in ["a"])', 'ask shell(command ~ "a")'],
        "shell",
        {"command": "a"},
        "allow",
        'allow shell(command in ["a"])',
    ),
    # a tie goes to ask, in either order
    (["allow shell", "ask shell"], "shell", {}, "ask", "ask shell"),
    (["ask shell", "allow shell"], "shell", {}, "ask", "ask shell"),
    # non-matching rules do not count; no match gives the default
    (['allow shell(command = "ls")'], "shell", {"command": "rm"}, "ask", None),
    (['deny shell(command = "rm")'], "shell", {"command": "ls"}, "ask", None),
    ([], "anything", {}, "ask", None),
]


@pytest.mark.parametrize(("rules", "tool", "args", "behavior", "rule"), PRECEDENCE)
def test_precedence_table(
    rules: list[str], tool: str, args: dict[str, Any], behavior: str, rule: str | None
) -> None:
    verdict = policy(*rules).explain(tool, args)
    assert verdict.behavior.value == behavior
    assert (verdict.rule.text if verdict.rule else None) == rule


def test_default_is_ask_unless_configured() -> None:
    assert decide(policy(), "x") == "ask"
    assert decide(policy(default="allow"), "x") == "allow"
    assert decide(policy(default="deny"), "x") == "deny"
    verdict = policy(default="deny").explain("x")
    assert verdict.source == "default" and verdict.rule_text == "default: deny"


@pytest.mark.parametrize(
    ("cond", "args", "expected"),
    [
        ("n = 1", {"n": 1}, True),
        ("n = 1", {"n": 1.0}, True),
        ("n = 1", {"n": True}, False),
        ("b = true", {"b": 1}, False),
        ("b = true", {"b": True}, True),
        ('s = "x"', {"s": "x"}, True),
        ("s = null", {"s": None}, True),
        ('l = [1, "a"]', {"l": [1, "a"]}, True),
        ('s != "x"', {"s": "y"}, True),
        ('s != "x"', {"s": "x"}, False),
        ('s != "x"', {}, False),  # a missing path never matches
        ('p ~ "src/**"', {"p": "src/a/b.py"}, True),
        ('p ~ "src/*"', {"p": "src/a/b.py"}, True),  # '/' is not special in globs
        ('p ~ "src/**"', {"p": "lib/src/a"}, False),  # whole-string match
        ('p ~ "*.py"', {"p": 3}, False),
        ('p ~ "[!a]?"', {"p": "bc"}, True),
        ('p ~ "[!a]?"', {"p": "ac"}, False),
        ('p !~ "*.env"', {"p": "a.env"}, False),
        ('p !~ "*.env"', {"p": "a.py"}, True),
        ('p !~ "*.env"', {"p": 3}, True),
        ('p !~ "*.env"', {}, False),
        ('p =~ "^ab+"', {"p": "abbbc"}, True),
        ('p =~ "b+"', {"p": "abbbc"}, True),  # search, not full match
        ('p =~ "^b"', {"p": "abc"}, False),
        ('p !=~ "^b"', {"p": "abc"}, True),
        ('p !=~ "^a"', {"p": "abc"}, False),
        ('p in ["a", "b"]', {"p": "b"}, True),
        ('p in ["a", "b"]', {"p": "c"}, False),
        ("p in [1, true]", {"p": 1}, True),
        ("p in [1]", {"p": True}, False),
        ("n < 10", {"n": 9.5}, True),
        ("n < 10", {"n": 10}, False),
        ("n < 10", {"n": "5"}, True),  # a deny reads what a tool could read as a number
        ("n < 10", {"n": "15"}, False),
        ("n < 10", {"n": "ten"}, False),
        ("n > 10", {"n": 11}, True),
        ("n > 10", {"n": True}, False),
        ("a.b = 1", {"a": {"b": 1}}, True),
        ("a.b = 1", {"a": [1]}, False),
        ("a.b = 1", {"a": None}, False),
        ('items[1] = "y"', {"items": ["x", "y"]}, True),
        ('items[5] = "y"', {"items": ["x", "y"]}, False),
        ('items[0].name = "n"', {"items": [{"name": "n"}]}, True),
        ('["a key"] = 1', {"a key": 1}, True),
    ],
)
def test_each_operator(cond: str, args: dict[str, Any], expected: bool) -> None:
    p = policy(f"deny t({cond})", default="allow")
    assert (p.evaluate("t", args).behavior is Behavior.DENY) is expected


def test_wildcards_match_any_for_deny_and_ask_but_every_for_allow() -> None:
    deny = policy('deny edit(files[*] ~ "*.env")', default="allow")
    assert decide(deny, "edit", files=["a.py", "b.env"]) == "deny"
    assert decide(deny, "edit", files=["a.py"]) == "allow"
    assert decide(deny, "edit", files=[]) == "allow"
    allow = policy('allow edit(files[*] ~ "src/**")')
    assert decide(allow, "edit", files=["src/a", "src/b"]) == "allow"
    assert decide(allow, "edit", files=["src/a", "etc/passwd"]) == "ask"
    assert decide(allow, "edit", files=[]) == "ask"
    ask = policy('ask edit(files[*] ~ "secret/*")', default="allow")
    assert decide(ask, "edit", files=["a", "secret/k"]) == "ask"
    nested = policy("deny t(a[*].b = 1)", default="allow")
    assert decide(nested, "t", a=[{"b": 2}, {"b": 1}]) == "deny"
    assert decide(nested, "t", a={"x": {"b": 1}}) == "deny"  # [*] over object values


def test_glob_and_regex_tool_matching() -> None:
    p = policy("deny mcp_github_*", "ask /^net_(get|put)$/", "allow read_?", default="allow")
    assert decide(p, "mcp_github_create_issue") == "deny"
    assert decide(p, "mcp_gitlab_x") == "allow"
    assert decide(p, "xmcp_github_a") == "allow"  # globs match the whole id
    assert decide(p, "net_get") == "ask"
    assert decide(p, "net_post") == "allow"
    assert decide(p, "read_x") == "allow"
    # a regex searches: unanchored it matches anywhere in the id
    assert decide(policy("deny /git/", default="allow"), "mcp_github_x") == "deny"
    # glob metacharacters are literal in exact ids, regex ones in globs
    assert decide(policy("deny a.b*", default="allow"), "axb") == "allow"


def test_remembered_decisions_rank_below_deny_and_above_other_rules() -> None:
    p = policy("ask write_file", 'deny write_file(path ~ "/etc/*")')
    args = {"path": "src/a"}
    entry = {"tool": "write_file", "arguments": args, "behavior": "allow"}
    thread = {call_key("write_file", args): entry}
    verdict = p.evaluate("write_file", args, thread)
    assert verdict.behavior is Behavior.ALLOW and verdict.source == "thread"
    assert verdict.rule_text == 'allow write_file(path = "src/a")'
    # only the exact same arguments
    assert p.evaluate("write_file", {"path": "src/b"}, thread).behavior is Behavior.ASK
    etc = {"path": "/etc/x"}
    remembered = {call_key("write_file", etc): {**entry, "arguments": etc}}
    assert p.evaluate("write_file", etc, remembered).behavior is Behavior.DENY
    # a remembered deny (profile) beats a remembered allow (thread)
    denied = {call_key("write_file", args): {**entry, "behavior": "deny"}}
    verdict = p.evaluate("write_file", args, thread, denied)
    assert verdict.behavior is Behavior.DENY and verdict.source == "profile"


def test_explain_returns_the_deciding_rule() -> None:
    config = {"allow": ['write_file(path ~ "src/**")'], "deny": ['write_file(path ~ "*.env")']}
    verdict = explain(config, "write_file", {"path": "src/.env"})
    assert verdict.behavior is Behavior.DENY
    assert verdict.rule is not None and verdict.rule.text == 'deny write_file(path ~ "*.env")'
    assert verdict.describe() == "rule 'deny write_file(path ~ \"*.env\")'"
    assert explain(config, "write_file", {"path": "src/a"}).rule_text == (
        'allow write_file(path ~ "src/**")'
    )
    assert explain(PermissionsConfig(), "x").describe() == "no rule matched; the default is ask"


def test_unconditional_denies_are_hidden() -> None:
    p = policy("deny delete_*", 'deny shell(command ~ "rm *")', "deny /^net_/")
    assert p.hidden(["delete_all", "shell", "net_get", "read"]) == {"delete_all", "net_get"}


def test_candidates_are_cached_per_tool() -> None:
    p = policy("allow a*", "deny b", "ask /c/")
    assert p.candidates("abc") is p.candidates("abc")


def test_a_verdict_no_argument_decides_is_shared_and_never_hides_a_remembered_one() -> None:
    p = policy("allow noop", "deny gone", 'allow pick(q = "a")', default="deny")
    first = p.evaluate("noop", {"q": "x"})
    assert first.behavior is Behavior.ALLOW and first.rule_text == "allow noop"
    assert p.evaluate("noop", {"q": " X\u200b", "extra": [1]}) is first
    # a remembered decision still decides for exactly its arguments
    args = {"q": "x"}
    entry = {"tool": "noop", "arguments": args, "behavior": "deny"}
    thread = {call_key("noop", args): entry}
    remembered = p.evaluate("noop", args, thread)
    assert remembered.behavior is Behavior.DENY and remembered.source == "thread"
    assert p.evaluate("noop", {"q": "y"}, thread).behavior is Behavior.ALLOW
    # an unconditional deny beats a remembered allow
    allowed = {call_key("gone", {}): {"tool": "gone", "arguments": {}, "behavior": "allow"}}
    assert p.evaluate("gone", {}, allowed).rule_text == "deny gone"
    # a conditional rule is matched on every call, whichever came first
    assert decide(p, "pick", q="b") == "deny"
    assert decide(p, "pick", q="a") == "allow"
    assert decide(p, "pick", q="b") == "deny"
    assert decide(p, "other") == "deny"


def test_a_path_argument_is_checked_on_every_call_of_an_unconditionally_allowed_tool(
    tmp_path: Any,
) -> None:
    config = PermissionsConfig.model_validate(
        {"allow": ["write_file"], "path_arguments": {"write_file": ["path"]}}
    ).model_copy(update={"path_root": str(tmp_path)})
    p = config.policy()
    assert p.evaluate("write_file", {"path": "src/a"}).behavior is Behavior.ALLOW
    escaped = p.evaluate("write_file", {"path": "../x"})
    assert escaped.behavior is Behavior.DENY and escaped.source == "argument"
    assert p.evaluate("write_file", {"path": "src/b"}).behavior is Behavior.ALLOW


# -- property: no sequence of allow rules can make a denied call run ----------------------

_names = st.sampled_from(["shell", "write_file", "read_file", "net_get"])
_values = st.one_of(st.text(max_size=6), st.integers(-5, 5), st.booleans(), st.none())
_args = st.dictionaries(st.sampled_from(["path", "command", "n"]), _values, max_size=3)
_conds = st.sampled_from(
    ["", 'path ~ "*"', "n > 0", 'command =~ "."', 'path != "x"', "n in [1, 2]", 'path = ""']
)
_patterns = st.sampled_from(["shell", "write_*", "/^(read|net)_/", "*", "/./"])


def _line(behavior: str, tool: str, cond: str) -> str:
    return f"{behavior} {tool}({cond})" if cond else f"{behavior} {tool}"


@settings(max_examples=300, deadline=None)
@given(
    deny=st.tuples(_patterns, _conds),
    allows=st.lists(st.tuples(_patterns, _conds), max_size=12),
    tool=_names,
    args=_args,
    default=st.sampled_from(["allow", "ask", "deny"]),
    remembered=st.booleans(),
)
def test_no_allow_rules_can_make_a_denied_call_run(
    deny: tuple[str, str],
    allows: list[tuple[str, str]],
    tool: str,
    args: dict[str, Any],
    default: str,
    remembered: bool,
) -> None:
    alone = policy(_line("deny", *deny), default=default)
    if (
        alone.evaluate(tool, args).behavior is not Behavior.DENY
        or alone.evaluate(tool, args).source != "rule"
    ):
        return
    # Put the allow rules before and after the deny, and remember an allow for the call.
    lines = [_line("allow", *a) for a in allows]
    mixed = policy(*lines, _line("deny", *deny), *lines, default=default)
    thread = (
        {call_key(tool, args): {"tool": tool, "arguments": args, "behavior": "allow"}}
        if remembered
        else None
    )
    assert mixed.evaluate(tool, args, thread, thread).behavior is Behavior.DENY


# -- property: the equality index decides exactly like a linear scan ------------------------

_eq_conds = st.sampled_from(
    [
        "",
        "n = 1",
        "n = 1.0",
        "n = true",
        'path = "a"',
        'path = "b"',
        "a.b = 1",
        "n = null",
        'path ~ "a*"',
        "n > 0",
        'path = "a", n = 1',
        'n = 2, path != "a"',
    ]
)
_eq_args = st.fixed_dictionaries(
    {},
    optional={
        "n": st.sampled_from([1, 1.0, 2, True, False, None, "1"]),
        "path": st.sampled_from(["a", "b", "ab", 1]),
        "a": st.sampled_from([{"b": 1}, {"b": True}, [1], None]),
    },
)


def _linear(rules: list[Any], tool: str, args: dict[str, Any], default: Behavior) -> Any:
    from awaken_ext_permissions import compile_conditions, compile_tool

    named = [r for r in rules if compile_tool(r)(tool)]
    denies = [r for r in named if r.behavior is Behavior.DENY]
    denies.sort(key=lambda r: (r.specificity(), -r.index), reverse=True)
    for r in denies:
        if compile_conditions(r)(args):
            return r
    others = [r for r in named if r.behavior is not Behavior.DENY]
    others.sort(key=lambda r: (r.specificity(), r.behavior is Behavior.ASK, -r.index), reverse=True)
    for r in others:
        if compile_conditions(r)(args):
            return r
    return None


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(
        st.tuples(
            st.sampled_from(["allow", "ask", "deny"]),
            st.sampled_from(["t", "t*", "/t/"]),
            _eq_conds,
        ),
        max_size=15,
    ),
    args=_eq_args,
)
def test_the_index_agrees_with_a_linear_scan(
    specs: list[tuple[str, str, str]], args: dict[str, Any]
) -> None:
    rules = [parse_rule_line(_line(b, t, c), i) for i, (b, t, c) in enumerate(specs)]
    indexed = Policy(rules).evaluate("t", args)
    expected = _linear(rules, "t", args, Behavior.ASK)
    assert indexed.rule == expected


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(
        st.tuples(
            st.sampled_from(["allow", "ask", "deny"]),
            st.sampled_from(["t", "t*"]),
            st.sampled_from(
                [
                    'path ~ "a*"',
                    'path ~ "ab*"',
                    'path ~ "a"',
                    'path ~ "*b"',
                    'path ~ "a?c"',
                    'path ~ "a[bc]*"',
                    'path ~ "ab*", n = 1',
                    'path ~ "abc"',
                    'a.b ~ "x*"',
                    'path = "ab"',
                    "",
                ]
            ),
        ),
        max_size=15,
    ),
    path=st.sampled_from(["", "a", "ab", "abc", "ac", "b", "abcd", "x"]),
    n=st.sampled_from([1, 2]),
)
def test_the_prefix_index_agrees_with_a_linear_scan(
    specs: list[tuple[str, str, str]], path: str, n: int
) -> None:
    rules = [parse_rule_line(_line(b, t, c), i) for i, (b, t, c) in enumerate(specs)]
    args = {"path": path, "n": n, "a": {"b": path.replace("a", "x")}}
    assert Policy(rules).evaluate("t", args).rule == _linear(rules, "t", args, Behavior.ASK)


_GLOB_TEXT = st.text(alphabet="ab*?/.x", max_size=8)


@settings(max_examples=300, deadline=None)
@given(pattern=_GLOB_TEXT, value=st.text(alphabet="ab/.x", max_size=12))
def test_the_glob_prefilter_never_changes_a_match(pattern: str, value: str) -> None:
    rule = parse_rule_line(f"deny t(p ~ {json.dumps(pattern)})")
    verdict = Policy([rule], Behavior.ALLOW).evaluate("t", {"p": value})
    # A deny also sees the normalized form of a path that is not normal (`//a` is `/a`).
    norm = unnormal_path(value)
    expected = fnmatch.fnmatchcase(value, pattern) or (
        norm is not None and fnmatch.fnmatchcase(norm, pattern)
    )
    assert (verdict.behavior is Behavior.DENY) == expected
