"""Property: no call a deny rule matches ever executes, however the model spells it.

Hypothesis draws rule sets for one to three levels of delegation and a call
whose meaning is known by construction (an integer, a boolean, the simple
commands of a compound shell line, a canonical path) but whose spelling is
hostile: ``"5000"``, ``" 5000 "``, ``5000.0``, ``"yes"``, ``1``, commands
chained with ``;``/``&&``/``|``/newlines/``$(...)``/backticks/subshells, hidden
in ``${X:-$(...)}`` or a here-doc body, and
spelled with quoted names (``'rm'``, ``r\\m``, ``r''m``), tabs and ``VAR=``
prefixes, paths with ``.``, ``..``, ``//``, trailing slashes and (for a policy
on a case-insensitive filesystem) any case. The oracle decides "a deny
matches" on the meaning with ``fnmatch`` and plain comparisons, independently
of the plugin's code; the run's tools count what really executed.
"""

from __future__ import annotations

import asyncio
import fnmatch
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

DECLARED = {
    "shell_arguments": {"shell": ["command"]},
    "path_arguments": {"write_file": ["path"]},
}

SIMPLE = ["git status", "git status --short", "rm -rf ~", "curl x", "ls -la", "echo hi", "make"]
PREFIXES = ["git status", "rm", "curl", "ls", "echo", "make"]
DIRS = ["src", "src/secrets", "docs", "src/secrets/deep"]
NAMES = ["key", "a.py", "README"]


@dataclass(frozen=True)
class Call:
    """A call: its tool, the spelled arguments, and what they mean."""

    tool: str
    arguments: dict[str, Any]
    parts: tuple[str, ...] = ()
    path: str = ""
    amount: int = 0
    force: bool = False
    any_case: dict[str, Any] | None = None
    """The arguments spelled in random case (for a policy on a case-insensitive filesystem)."""


def _int_spellings(n: int) -> st.SearchStrategy[Any]:
    return st.sampled_from([n, float(n), str(n), f" {n} ", f"{n}\n", f"+{n}"])


def _bool_spellings(b: bool) -> st.SearchStrategy[Any]:
    yes = [True, 1, "true", "True", "yes", "on", "1", "y", "t"]
    no = [False, 0, "false", "False", "no", "off", "0", "n", "f"]
    return st.sampled_from(yes if b else no)


def _spelled(draw: st.DrawFn, command: str) -> str:
    """``command`` as the model might write it: quoted name, odd blanks, a VAR= prefix."""
    name, *args = command.split(" ")
    form = draw(st.sampled_from(["plain", "plain", "single", "double", "backslash", "split"]))
    if form == "single":
        name = f"'{name}'"
    elif form == "double":
        name = f'"{name}"'
    elif form == "backslash" and len(name) > 1:
        name = f"{name[0]}\\{name[1:]}"
    elif form == "split" and len(name) > 1:
        name = f"{name[0]}''{name[1:]}"
    text = name
    for arg in args:
        text += draw(st.sampled_from([" ", " ", "  ", "\t"])) + arg
    return draw(st.sampled_from(["", "", "X=1 ", "A=b B=c "])) + text


@st.composite
def shell_calls(draw: st.DrawFn) -> Call:
    commands = draw(st.lists(st.sampled_from(SIMPLE), min_size=1, max_size=4))
    text = _spelled(draw, commands[0])
    for meaning in commands[1:]:
        command = _spelled(draw, meaning)
        form = draw(
            st.sampled_from(["sep", "subst", "backtick", "subshell", "parameter", "heredoc"])
        )
        if form == "sep":
            sep = draw(st.sampled_from([";", " ; ", "&&", " || ", " | ", "\n", " & ", ";\n"]))
            text = f"{text}{sep}{command}"
        elif form == "subst":
            text = f"{text} $({command})"
        elif form == "backtick":
            text = f"{text} `{command}`"
        elif form == "parameter":  # bash runs a substitution inside ${...}
            text = f"{text} ${{X:-$({command})}}"
        elif form == "heredoc":  # ... and inside an unquoted here-doc body
            text = f"{text}; cat <<EOF\n$({command})\nEOF\n"
        else:
            text = f"{text}; ({command})"
    return Call("shell", {"command": text}, parts=tuple(commands))


@st.composite
def path_calls(draw: st.DrawFn) -> Call:
    canonical = f"{draw(st.sampled_from(DIRS))}/{draw(st.sampled_from(NAMES))}"
    segments = canonical.split("/")
    out: list[str] = []
    for seg in segments:
        junk = draw(st.sampled_from(["", ".", "x/..", "./.", "", "a/b/../.."]))
        if junk:
            out.append(junk)
        out.append(seg)
    sep = draw(st.sampled_from(["/", "//", "/./"]))
    spelled = sep.join(out) + draw(st.sampled_from(["", "/", "//", "/."]))
    if draw(st.booleans()):
        spelled = "./" + spelled
    flips = draw(st.lists(st.booleans(), min_size=len(spelled), max_size=len(spelled)))
    any_case = "".join(c.upper() if f else c for c, f in zip(spelled, flips, strict=True))
    return Call("write_file", {"path": spelled}, path=canonical, any_case={"path": any_case})


@st.composite
def money_calls(draw: st.DrawFn) -> Call:
    n = draw(st.integers(0, 10_000))
    return Call("transfer", {"amount": draw(_int_spellings(n))}, amount=n)


@st.composite
def repo_calls(draw: st.DrawFn) -> Call:
    force = draw(st.booleans())
    return Call("delete_repo", {"repo": "r", "force": draw(_bool_spellings(force))}, force=force)


calls = st.one_of(shell_calls(), path_calls(), money_calls(), repo_calls())


@dataclass(frozen=True)
class Spec:
    """One rule in a form the oracle understands."""

    behavior: str
    tool: str
    text: str
    glob: str = ""
    gt: int | None = None
    force: bool | None = None

    def matches(self, call: Call) -> bool:
        if call.tool != self.tool:
            return False
        if self.tool == "shell":
            return any(fnmatch.fnmatchcase(p, self.glob) for p in call.parts)
        if self.tool == "write_file":
            return fnmatch.fnmatchcase(call.path, self.glob)
        if self.tool == "transfer":
            return self.gt is None or call.amount > self.gt
        return self.force is None or call.force == self.force


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    behavior = draw(st.sampled_from(["allow", "deny", "deny", "ask"]))
    kind = draw(st.sampled_from(["shell", "write_file", "transfer", "delete_repo"]))
    if kind == "shell":
        glob = draw(st.sampled_from(PREFIXES)) + "*"
        return Spec(behavior, kind, f'shell(command ~ "{glob}")', glob=glob)
    if kind == "write_file":
        glob = draw(st.sampled_from(DIRS)) + "/*"
        return Spec(behavior, kind, f'write_file(path ~ "{glob}")', glob=glob)
    if kind == "transfer":
        gt = draw(st.integers(0, 10_000))
        return Spec(behavior, kind, f"transfer(amount > {gt})", gt=gt)
    force = draw(st.booleans())
    return Spec(behavior, kind, f"delete_repo(force = {str(force).lower()})", force=force)


@st.composite
def levels(draw: st.DrawFn) -> list[tuple[list[Spec], str]]:
    count = draw(st.integers(1, 3))
    drawn = st.lists(specs(), max_size=6)
    # Mostly "allow" defaults: a bypass needs the call to get through every other level.
    defaults = st.sampled_from(["allow", "allow", "allow", "deny", "ask"])
    return [(draw(drawn), draw(defaults)) for _ in range(count)]


def _config(
    rules: list[Spec], default: str, delegates: bool, insensitive: bool = False
) -> dict[str, Any]:
    config: dict[str, Any] = {"rules": [f"{r.behavior} {r.text}" for r in rules], **DECLARED}
    config["default"] = default
    config["path_case_insensitive"] = insensitive
    if delegates:
        config["rules"].insert(0, "allow agent_run")
    return config


def _denied(stack: list[tuple[list[Spec], str]], call: Call) -> bool:
    return any(r.behavior == "deny" and r.matches(call) for rules, _ in stack for r in rules)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(stack=levels(), call=calls, insensitive=st.booleans())
def test_a_call_a_deny_matches_never_executes(
    rig: Any, stack: Any, call: Call, insensitive: bool
) -> None:
    rig.EXECUTED.clear()
    last = len(stack) - 1
    configs = [
        _config(rules, default, i < last, insensitive) for i, (rules, default) in enumerate(stack)
    ]
    # On a case-insensitive filesystem the model may spell a path in any case.
    arguments = call.any_case if insensitive and call.any_case else call.arguments
    runtime = rig.chain(configs, rig.call(call.tool, "k", **arguments))
    asyncio.run(runtime.run("a0", "go", thread_id="t"))
    denied = _denied(stack, call)
    event("denied" if denied else "not denied")
    event("executed" if rig.EXECUTED else "not executed")
    event(f"{len(stack)} levels")
    if denied:
        assert rig.EXECUTED == [], (configs, call)


@settings(max_examples=150, deadline=None)
@given(call=st.one_of(shell_calls(), path_calls()))
def test_an_allow_never_holds_for_a_part_it_does_not_match(call: Call) -> None:
    """Direct on the policy: allow-only rules allow iff every part (or the path) matches."""
    from awaken_ext_permissions import explain

    for prefix in PREFIXES:
        config: dict[str, Any] = {
            "allow": [f'shell(command ~ "{prefix}*")', 'write_file(path ~ "docs/*")'],
            "default": "deny",
            **DECLARED,
        }
        verdict = explain(config, call.tool, call.arguments)
        if call.tool == "shell":
            expected = all(fnmatch.fnmatchcase(p, f"{prefix}*") for p in call.parts)
            # A substitution's outer command is a part of its own, and text bash cannot
            # parse asks: allowing less than the oracle is the safe side, never more.
            assert verdict.behavior.value != "allow" or expected, (call, verdict)
        else:
            expected = fnmatch.fnmatchcase(call.path, "docs/*")
            assert (verdict.behavior.value == "allow") == expected, (call, verdict)


@settings(max_examples=400, deadline=None)
@given(call=shell_calls())
def test_a_deny_on_any_part_is_never_allowed(call: Call) -> None:
    """Direct on the policy: with only deny rules and a default of allow, a call one of
    whose commands a deny matches (wherever it hides) is never allowed."""
    from awaken_ext_permissions import explain

    for prefix in PREFIXES:
        config: dict[str, Any] = {
            "deny": [f'shell(command ~ "{prefix}*")'],
            "default": "allow",
            **DECLARED,
        }
        verdict = explain(config, "shell", call.arguments)
        if any(fnmatch.fnmatchcase(p, f"{prefix}*") for p in call.parts):
            assert verdict.behavior.value != "allow", (call, verdict)
