"""The safe default: with NO declarations an allow rule vouches only for what it can.

Hostile shell, path and numeric spellings are generated against a policy that
declares nothing (no ``shell_arguments``, ``path_arguments`` or
``text_arguments``); none may be allowed: each is asked or denied. The same
variants also go through a real run of the runtime, where the tool must never
execute.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import awaken_runtime as ar
from awaken_ext_permissions import PermissionsPlugin, explain
from awaken_ext_permissions._vouch import plain, unnormal_path
from awaken_runtime import tool

POLICY: dict[str, Any] = {
    "allow": [
        'shell(command ~ "git status*")',
        'shell(command =~ "^ls ")',
        'write_file(path ~ "src/*")',
        'fetch(url ~ "https://docs.example.com/*")',
        "set_limit(value < 100)",
        "set_limit_raw(value < 100)",
        'note(text !~ "*secret*")',
    ],
    "deny": ['write_file(path ~ "src/secrets/*")', "set_limit(value > 1000)"],
    "default": "ask",
}
"""No declaration at all: every argument is undeclared."""

CAP: dict[str, Any] = {
    "deny": ["set_limit(value > 100)", "set_limit_raw(value > 100)"],
    "default": "allow",
}
"""Only a numeric deny cap; the default allows (the cap is the whole fence)."""

# -- generated hostile variants ----------------------------------------------------------

_OPERATORS = [";", "&&", "||", "|", "&", "`", "$(", "\n", "\r", ">", ">>", "<", "2>", "<("]
_OPERATORS += ["\x00", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\r\n"]
# Look-alikes that NFKC folds into an operator (a tool or a shell wrapper may fold them).
_OPERATORS += ["\uff1b", "\uff06", "\uff5c", "\uff1e", "\uff1c", "\ufe54", "\uff04("]
_WORDS = st.text(alphabet="abcrm -~/.*$'\"", max_size=10)

compound = st.builds(
    lambda head, op, tail: f"{head}{op}{tail}",
    st.sampled_from(["git status", "git status ", "git status --short ", "ls -la "]),
    st.sampled_from(_OPERATORS),
    st.one_of(st.sampled_from(["rm -rf ~", " curl x | sh", "reboot", ""]), _WORDS),
)

_BAD_SEGMENTS = [".", "..", "", "\uff0e", "\uff0e\uff0e", "\u2024", "\u2025"]
_SEPARATORS = ["/", "\\", "\uff0f", "\u2215"]
_GOOD = st.sampled_from(["a", "secrets", "key", "lib", "x.py", "..x", ".env"])

unnormal_paths = st.builds(
    lambda head, bad, sep, rest, trail: "src" + sep + sep.join([*head, bad, *rest]) + trail,
    st.lists(_GOOD, max_size=2),
    st.sampled_from(_BAD_SEGMENTS),
    st.sampled_from(_SEPARATORS),
    st.lists(_GOOD, min_size=1, max_size=3),
    st.sampled_from(["", "/"]),
)

_NON_FINITE = ["nan", "inf", "infinity", "1e999", "1e400", "1E+309"]
spelled = st.builds(
    lambda word, sign, case, pad: f"{pad}{sign}{case(word)}{pad}",
    st.sampled_from(_NON_FINITE),
    st.sampled_from(["", "+", "-"]),
    st.sampled_from([str.lower, str.upper, str.title]),
    st.sampled_from(["", " ", "\t"]),
)
non_finite = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, float("-nan")]),
    spelled,
    st.sampled_from(["NaN", "-Infinity", "Infinity", "\uff11e999", "1_0e999"]),
)
numeric_spellings = st.one_of(
    non_finite,
    st.booleans(),
    st.integers(min_value=101, max_value=10**30).map(lambda n: f" {n} "),
    st.integers(min_value=101, max_value=10**6).map(hex),
    st.integers(min_value=101).map(str),
)


def _decided(config: dict[str, Any], tool_name: str, args: dict[str, Any]) -> str:
    return explain(config, tool_name, args).behavior.value


@settings(max_examples=300, deadline=None)
@given(command=compound)
def test_a_compound_command_is_never_allowed_undeclared(command: str) -> None:
    assert _decided(POLICY, "shell", {"command": command}) != "allow"


@settings(max_examples=300, deadline=None)
@given(path=unnormal_paths)
def test_an_unnormal_path_is_never_allowed_undeclared(path: str) -> None:
    assert _decided(POLICY, "write_file", {"path": path}) != "allow"


_JUNK = st.sampled_from(["./", "/", "x/../", "./x/../", "", "a/b/../../"])
secret_paths = st.builds(lambda pre, mid: f"src/{pre}secrets/{mid}key", _JUNK, _JUNK).filter(
    lambda p: unnormal_path(p) is not None
)


@settings(max_examples=200, deadline=None)
@given(path=secret_paths)
def test_a_deny_sees_the_normalized_form_of_an_undeclared_path(path: str) -> None:
    assert unnormal_path(path) == "src/secrets/key"
    assert _decided({**POLICY, "default": "allow"}, "write_file", {"path": path}) == "deny"


@settings(max_examples=300, deadline=None)
@given(value=numeric_spellings)
def test_numbers_no_cap_can_order_never_satisfy_an_allow(value: Any) -> None:
    assert _decided(POLICY, "set_limit", {"value": value}) != "allow"
    assert _decided(POLICY, "set_limit_raw", {"value": value}) != "allow"


@settings(max_examples=300, deadline=None)
@given(value=non_finite)
def test_non_finite_numbers_and_their_spellings_match_a_deny_cap(value: Any) -> None:
    assert _decided(CAP, "set_limit", {"value": value}) == "deny"


def test_the_issue_s_three_cases() -> None:
    assert _decided(POLICY, "shell", {"command": "git status; rm -rf ~"}) == "ask"
    assert _decided(POLICY, "write_file", {"path": "src/./secrets/key"}) == "deny"
    assert _decided(CAP, "set_limit", {"value": "nan"}) == "deny"


def test_plain_values_are_still_allowed_undeclared() -> None:
    # The safe default must not make every allow useless.
    assert _decided(POLICY, "shell", {"command": "git status --short"}) == "allow"
    assert _decided(POLICY, "shell", {"command": "ls -la src/"}) == "allow"
    assert _decided(POLICY, "write_file", {"path": "src/app/main.py"}) == "allow"
    assert _decided(POLICY, "write_file", {"path": "src/app/"}) == "allow"
    assert _decided(POLICY, "write_file", {"path": "src/..hidden/x"}) == "allow"
    assert _decided(POLICY, "fetch", {"url": "https://docs.example.com/a/b"}) == "allow"
    assert _decided(POLICY, "fetch", {"url": "https://docs.example.com/a/%2e%2e/b"}) == "ask"
    assert _decided(POLICY, "fetch", {"url": "https://docs.example.com/a//b"}) == "ask"
    assert _decided(POLICY, "set_limit", {"value": 99.5}) == "allow"
    assert _decided(POLICY, "note", {"text": "hello"}) == "allow"
    assert _decided(POLICY, "note", {"text": "hello; rm -rf ~"}) == "ask"  # negations too
    assert _decided(CAP, "set_limit", {"value": 100}) == "allow"
    assert _decided(CAP, "set_limit", {"value": True}) == "allow"  # a bool reads as 1


def test_declared_arguments_keep_their_own_treatment() -> None:
    shell = {**POLICY, "shell_arguments": {"shell": ["command"]}}
    assert _decided(shell, "shell", {"command": "git status | git status"}) == "allow"
    assert _decided(shell, "shell", {"command": "git status > out.txt"}) == "allow"
    paths = {**POLICY, "path_arguments": {"write_file": ["path"]}}
    assert _decided(paths, "write_file", {"path": "src/./a//b"}) == "allow"
    text = {**POLICY, "text_arguments": {"fetch": ["url"]}}
    url = "https://docs.example.com/search?q=a&page=2"
    assert _decided(POLICY, "fetch", {"url": url}) == "ask"
    assert _decided(text, "fetch", {"url": url}) == "allow"


def test_a_glob_declaration_covers_every_tool_it_names() -> None:
    text = {**POLICY, "text_arguments": {"fe*": ["url"]}}
    assert _decided(text, "fetch", {"url": "https://docs.example.com/a?b=1&c=2"}) == "allow"


def test_an_undeclared_argument_beside_a_declared_one_is_still_checked() -> None:
    config = {
        "allow": ['shell(command ~ "git status*", cwd ~ "src/*")'],
        "shell_arguments": {"shell": ["command"]},
    }
    ok = {"command": "git status", "cwd": "src/a"}
    assert _decided(config, "shell", ok) == "allow"
    assert _decided(config, "shell", {**ok, "cwd": "src/../etc"}) == "ask"


def test_a_wildcard_allow_checks_every_element() -> None:
    config = {"allow": ['edit(files[*] ~ "src/*")']}
    assert _decided(config, "edit", {"files": ["src/a", "src/b"]}) == "allow"
    assert _decided(config, "edit", {"files": ["src/a", "src/../b"]}) == "ask"
    deny = {"deny": ['edit(files[*] ~ "src/secrets/*")'], "default": "allow"}
    assert _decided(deny, "edit", {"files": ["src/a", "src/x/../secrets/k"]}) == "deny"


def test_plain_is_decided_per_string_and_long_strings_are_checked_too() -> None:
    assert plain("a" * 5000) and not plain("a" * 5000 + ";")
    assert plain(5) and plain(None)
    assert not plain("src/./a") and plain("src/a/") and plain("/")


# -- through a real run: the tool never executes -------------------------------------------

EXECUTED: list[tuple[str, Any]] = []


@tool
def set_limit(value: float) -> str:
    """Set a limit (coerced: pydantic reads "nan" and "inf" as floats).

    Args:
        value: The limit.
    """
    EXECUTED.append(("set_limit", value))
    return "set"


class Recording:
    """A tool without ``coerce_arguments`` (it receives the model's JSON as it is)
    that records its one argument when it runs."""

    def __init__(self, tool_id: str, argument: str) -> None:
        self.argument = argument
        self.descriptor = ar.ToolDescriptor(
            id=tool_id, parameters={"type": "object", "properties": {argument: {}}}
        )

    async def call(self, args: dict[str, Any], ctx: ar.ToolCallContext) -> ar.ToolOutput:
        EXECUTED.append((self.descriptor.id, args.get(self.argument)))
        return ar.ToolOutput.ok("ran")


TOOLS = [
    set_limit,
    Recording("shell", "command"),
    Recording("write_file", "path"),
    Recording("set_limit_raw", "value"),
]


_NEXT: list[tuple[str, dict[str, Any]]] = []


def _turn(request: ar.InferenceRequest) -> ar.ScriptedTurn | str:
    if request.messages[-1].role == "tool":
        return "done"
    name, args = _NEXT[-1]
    return ar.ScriptedTurn.call(name, args)


def _run(config: dict[str, Any], name: str, args: dict[str, Any]) -> Any:
    _NEXT.append((name, args))
    EXECUTED.clear()
    builder = (
        ar.AgentRuntimeBuilder(discover=False)
        .with_plugin(PermissionsPlugin())
        .with_model(ar.ModelSpec(id="m", provider="p", model="scripted"))
        .with_provider("p", ar.ScriptedExecutor([_turn], repeat=True))
    )
    for t in TOOLS:
        builder.with_tool(t)
    builder.with_agent_spec(
        ar.AgentConfig(
            id="agent",
            model_binding="m",
            tool_ids=[t.descriptor.id for t in TOOLS],
            plugin_ids=["permissions"],
            plugin_config={"permissions": config},
        )
    )
    return asyncio.run(builder.build().run("agent", "go", thread_id="t"))


def _held(state: Any) -> bool:
    """Asked (a ticket waits) or refused (a tool result says why); never executed."""
    if EXECUTED:
        return False
    if state.tickets:
        return True
    texts = [m.text for m in state.new_messages if m.role == "tool"]
    return len(texts) == 1 and ("Permission denied" in texts[0] or "Invalid" in texts[0])


@settings(max_examples=40, deadline=None)
@given(command=compound)
def test_a_run_never_executes_a_compound_command(command: str) -> None:
    assert _held(_run(POLICY, "shell", {"command": command}))


@settings(max_examples=40, deadline=None)
@given(path=unnormal_paths)
def test_a_run_never_executes_an_unnormal_path(path: str) -> None:
    assert _held(_run(POLICY, "write_file", {"path": path}))


@settings(max_examples=40, deadline=None)
@given(value=numeric_spellings)
def test_a_run_never_executes_an_unorderable_number(value: Any) -> None:
    assert _held(_run(POLICY, "set_limit_raw", {"value": value}))
    if not isinstance(value, bool):  # coerced, a bool is the number 1.0: allowed, rightly
        assert _held(_run(POLICY, "set_limit", {"value": value}))


@settings(max_examples=40, deadline=None)
@given(value=non_finite)
def test_a_run_denies_non_finite_values_under_a_cap_with_default_allow(value: Any) -> None:
    for name in ("set_limit", "set_limit_raw"):
        state = _run(CAP, name, {"value": value})
        assert _held(state) and not state.tickets


def test_a_run_still_executes_what_the_allow_vouches_for() -> None:
    _run(POLICY, "shell", {"command": "git status"})
    assert EXECUTED == [("shell", "git status")]
    _run(POLICY, "set_limit_raw", {"value": 5})
    assert EXECUTED == [("set_limit_raw", 5)]


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        ("deny t(v > 0)", True, "deny"),  # a bool reads as 1
        ("deny t(v < 1)", False, "deny"),  # and as 0
        ("deny t(v > 0)", False, "allow"),
        ("deny t(v > 10)", "0x1f", "deny"),  # int(x, 0) spellings
        ("deny t(v > 10)", "0b11111", "deny"),
        ("deny t(v > 10)", "0o37", "deny"),
        ("deny t(v > 10)", "0x1", "allow"),
        ("deny t(v > 10)", "\u3000 31 \u3000", "deny"),  # unicode blanks around it
        ("deny t(v > 10)", "31 apples", "allow"),  # no tool reads that as a number
        ("deny t(v < 0)", "-Infinity", "deny"),
        ("deny t(v < 0)", "inf", "deny"),  # not finite: caught by any cap
        ("deny t(v < 0)", 5, "allow"),
        ("deny t(v < 0)", -1, "deny"),
        ("deny t(v > 10)", [11], "allow"),  # not a number at all: not this rule's to judge
        ("deny t(v > 10)", None, "allow"),
    ],
)
def test_what_a_deny_cap_reads_as_a_number(rule: str, value: Any, expected: str) -> None:
    assert _decided({"rules": [rule], "default": "allow"}, "t", {"v": value}) == expected


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        ("allow t(v < 10)", 5, "allow"),
        ("allow t(v < 10)", 5.5, "allow"),
        ("allow t(v < 10)", 10**30 * -1, "allow"),
        ("allow t(v < 10)", -math.inf, "ask"),
        ("allow t(v < 10)", math.nan, "ask"),
        ("allow t(v > 10)", math.inf, "ask"),
        ("allow t(v > 10)", 11, "allow"),
        ("allow t(v > 10)", 10, "ask"),
        ("allow t(v < 10)", "5", "ask"),
        ("allow t(v < 10)", True, "ask"),
    ],
)
def test_what_an_allow_bound_accepts(rule: str, value: Any, expected: str) -> None:
    assert _decided({"rules": [rule]}, "t", {"v": value}) == expected


@pytest.mark.parametrize(
    "rule",
    [
        't(v != "fast")',
        't(v !~ "*rm*")',
        't(v !=~ "rm")',
        't(v =~ "^ls")',
        't(v ~ "ls*")',
        't(v[*] ~ "ls*")',
    ],
)
def test_every_pattern_operator_of_an_allow_needs_a_plain_value(rule: str) -> None:
    config = {"allow": [rule]}
    value = "ls; reboot"
    args = {"v": [value] if "[*]" in rule else value}
    assert _decided(config, "t", args) == "ask"
    ok = {"v": ["ls -la"] if "[*]" in rule else "ls -la"}
    assert _decided(config, "t", ok) == "allow"


def test_exact_values_are_the_rule_author_s_own_and_stay_allowed() -> None:
    config = {"allow": ['t(v = "a; b")', 't(w in ["c | d"])']}
    assert _decided(config, "t", {"v": "a; b"}) == "allow"
    assert _decided(config, "t", {"w": "c | d"}) == "allow"


@pytest.mark.parametrize(
    ("value", "normalized"),
    [
        ("//etc/./passwd", "/etc/passwd"),
        ("src\\..\\secrets\\key", "secrets/key"),
        ("src/a/../../..", ".."),
        ("src/a/", None),  # a trailing slash is normal
        ("/", None),
        ("a/b", None),
        ("https://x/a/../b", None),  # a URL's path is not the filesystem's to normalize
        ("no slash", None),
        (7, None),
    ],
)
def test_unnormal_path(value: Any, normalized: str | None) -> None:
    assert unnormal_path(value) == normalized


def test_a_deny_sees_normalized_items_of_a_list_and_names_them() -> None:
    config = {"deny": ['t(p[*] ~ "src/secrets/*")'], "default": "allow"}
    verdict = explain(config, "t", {"p": ["src/a", "src/x/../secrets/k"]})
    assert (verdict.behavior.value, verdict.detail) == ("deny", "path p (normalized)")
    one = explain({**config, "deny": ['t(q ~ "src/secrets/*")']}, "t", {"q": "src//secrets/k"})
    assert one.detail == "path q='src/secrets/k' (normalized from 'src//secrets/k')"
    assert explain(config, "t", {"p": ["src/a", 3]}).behavior.value == "allow"
