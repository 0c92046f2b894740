"""The indexes skip only what cannot match: scan batches and tool-pattern prefixes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_permissions import (
    Behavior,
    Policy,
    compile_conditions,
    compile_tool,
    parse_rule_line,
)
from awaken_ext_permissions._tools import literal_prefix


def _linear(rules: list[Any], tool: str, args: dict[str, Any]) -> Any:
    named = [r for r in rules if compile_tool(r)(tool)]
    for group in (
        sorted(
            (r for r in named if r.behavior is Behavior.DENY),
            key=lambda r: (r.specificity(), -r.index),
            reverse=True,
        ),
        sorted(
            (r for r in named if r.behavior is not Behavior.DENY),
            key=lambda r: (r.specificity(), r.behavior is Behavior.ASK, -r.index),
            reverse=True,
        ),
    ):
        for r in group:
            if compile_conditions(r)(args):
                return r
    return None


_SCANNED = st.sampled_from(
    [
        'p =~ "b"',
        'p =~ "^a"',
        'p =~ "x$"',
        'p ~ "*b*"',
        'p ~ "*a"',
        'p ~ "*"',
        'p ~ "*b*", n = 1',
        'p =~ "a", n > 1',
        'q ~ "*a*"',
        'p !~ "*a*"',
        "n > 0",
        'p =~ "a", q =~ "b"',
        'p = "ab"',
        "",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    specs=st.lists(
        st.tuples(
            st.sampled_from(["allow", "ask", "deny"]), st.sampled_from(["t", "t*"]), _SCANNED
        ),
        max_size=16,
    ),
    p=st.one_of(st.text(alphabet="abx", max_size=5), st.integers(0, 2)),
    q=st.text(alphabet="ab", max_size=3),
    n=st.integers(0, 2),
)
def test_scan_batches_decide_like_a_linear_scan(
    specs: list[tuple[str, str, str]], p: Any, q: str, n: int
) -> None:
    lines = [f"{b} {t}({c})" if c else f"{b} {t}" for b, t, c in specs]
    rules = [parse_rule_line(line, i) for i, line in enumerate(lines)]
    args = {"p": p, "q": q, "n": n}
    assert Policy(rules).evaluate("t", args).rule == _linear(rules, "t", args)


_TOOL_PATTERNS = st.sampled_from(
    [
        "/^mcp_/",
        "/^mcp_(a|b)$/",
        "/^mc|x/",
        "/^mcpx*/",
        "/^mcp{0}/",
        "/(?i)^MCP/",
        "/^(?i:M)CP/",
        "/^m[|]c/",
        "/mcp/",
        "/^a\\|b/",
        "mcp_*",
        "m?p_*",
        "*_a",
        "mcp_a",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(
        st.tuples(st.sampled_from(["allow", "ask", "deny"]), _TOOL_PATTERNS), max_size=8
    ),
    tool=st.sampled_from(
        ["mcp_a", "mcp_b", "mc", "x", "MCP_a", "m", "mcpxx", "a|b", "m|c", "mp_a"]
    ),
)
def test_tool_prefixes_find_every_pattern_that_matches(
    patterns: list[tuple[str, str]], tool: str
) -> None:
    rules = [parse_rule_line(f"{b} {t}", i) for i, (b, t) in enumerate(patterns)]
    assert Policy(rules).evaluate(tool, {}).rule == _linear(rules, tool, {})
    for rule in rules:
        prefix = literal_prefix(rule)
        if compile_tool(rule)(tool):
            assert tool.startswith(prefix), (rule.tool, tool, prefix)


def test_regex_prefixes_are_taken_only_when_safe() -> None:
    def prefix(pattern: str) -> str:
        return literal_prefix(parse_rule_line(f"allow /{pattern}/"))

    assert prefix("^mcp_(get|put)$") == "mcp_"
    assert prefix("^ab*") == "a"
    assert prefix("^ab?c") == "a"
    for unsafe in ["^a|b", "(?i)^ab", "^(?i:a)b", "ab", "^[a]b", "^a{2}"]:
        assert prefix(unsafe) == "", unsafe
