"""The shell splitter: quoting never hides a command, the fast path agrees with bashlex."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_permissions import explain, split_shell
from awaken_ext_permissions._shell import MAX_PARSED, _fast_split, _parse

SHELL: dict[str, Any] = {
    "deny": ['shell(command ~ "rm *")'],
    "default": "allow",
    "shell_arguments": {"shell": ["command"]},
}


@pytest.mark.parametrize(
    "command",
    [
        "'rm' -rf ~",
        '"rm" -rf ~',
        "r\\m -rf ~",
        "rm\t-rf ~",
        "rm   -rf ~",
        "X=1 rm -rf ~",
        "X=1 Y=$(id) rm -rf ~ 2>/dev/null",
        "git status;'r'm -rf ~",
        'echo ok && e""cho x | rm -rf ~',
    ],
)
def test_quotes_blanks_and_prefixes_do_not_hide_a_denied_command(command: str) -> None:
    verdict = explain(SHELL, "shell", {"command": command})
    assert verdict.behavior.value == "deny", (command, verdict)
    # the whole line, or the part bash reads as `rm -rf ~`, is what the deny matched
    assert verdict.detail == "" or "rm -rf ~" in verdict.detail


@pytest.mark.parametrize(
    "command", ["$X -rf ~", "$(echo rm) -rf ~", "`echo rm` x", "/bin/r? -rf ~", "r* x", "${R} x"]
)
def test_a_command_whose_name_is_computed_is_unparsable(command: str) -> None:
    with pytest.raises(ValueError, match="only known when it runs"):
        split_shell(command)
    assert explain(SHELL, "shell", {"command": command}).behavior.value == "ask"
    denying = {**SHELL, "unparsable_shell": "deny"}
    assert explain(denying, "shell", {"command": command}).behavior.value == "deny"


def test_an_allow_must_hold_for_the_command_as_written_and_as_read() -> None:
    config = {
        "allow": ['shell(command ~ "git commit -m *")'],
        "default": "deny",
        "shell_arguments": {"shell": ["command"]},
    }
    assert explain(config, "shell", {"command": 'git commit -m "a; b"'}).behavior.value == "allow"
    # as written it starts with X=1, so the allow does not hold for that spelling
    assert explain(config, "shell", {"command": "X=1 git commit -m a"}).behavior.value == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "echo $(true\nrm -rf ~)",
        "echo \"$(true\n'rm' -rf ~)\"",
        "echo `true\nrm -rf ~`",
        "diff <(true\nrm -rf ~) x",
        "echo $(true;\nrm -rf ~)",
    ],
)
def test_a_newline_inside_a_substitution_is_refused(command: str) -> None:
    # bashlex would return only `true` here, hiding `rm -rf ~` from the rules.
    with pytest.raises(ValueError, match="newline inside"):
        split_shell(command)
    allowing = {
        "allow": [
            'shell(command ~ "echo *")',
            'shell(command ~ "diff *")',
            "shell(command = 'true')",
        ],
        "deny": ['shell(command ~ "rm *")'],
        "default": "ask",
        "shell_arguments": {"shell": ["command"]},
    }
    assert explain(allowing, "shell", {"command": command}).behavior.value != "allow"


@pytest.mark.parametrize(
    "command",
    [
        "echo ${X:-$(rm -rf ~)}",
        'echo "${X:-`rm -rf ~`}"',
        "cat <<EOF\n$(rm -rf ~)\nEOF",
        "cat <<EOF\n`rm -rf ~`\nEOF",
        "echo '$(literal)' \\`x",
        "echo '<(x)' <(y)",
    ],
)
def test_a_substitution_bashlex_does_not_show_is_refused(command: str) -> None:
    # bash runs these (or may); bashlex 0.18 returns no node for them: never let them pass.
    with pytest.raises(ValueError, match="does not see"):
        split_shell(command)


def test_substitutions_bashlex_shows_are_kept() -> None:
    assert split_shell('a <<< "$(rm y)"') == ['a <<< "$(rm y)"', "a", "rm y"]
    assert split_shell("cat <<EOF\nplain $HOME\nEOF") == ["cat <<EOF", "cat"]


def test_reserved_words_and_odd_lists_leave_the_fast_path() -> None:
    for command in ["time rm x", "if a; then rm x; fi", "a;;b", "a |& b", "a &", "{ a; }"]:
        assert _fast_split(command) is None or not _fast_split(command)
    assert split_shell("if true; then rm -rf /; fi") == ["true", "rm -rf /"]
    assert explain(SHELL, "shell", {"command": "a && b; c | time rm x"}).behavior.value == "ask"


def test_overlong_and_unparsable_lines_are_refused_and_the_refusal_is_kept() -> None:
    long_line = 'echo "$x' + "y" * MAX_PARSED + '"'  # an expansion: only bashlex reads it
    with pytest.raises(ValueError, match="longer than"):
        split_shell(long_line)
    with pytest.raises(ValueError, match="cannot parse"):
        split_shell("git status 'open")
    with pytest.raises(ValueError, match="cannot parse"):  # from the cache, same answer
        split_shell("git status 'open")
    # a plain or simply quoted line is split without the parser, at any length
    assert split_shell("ls " + "a" * (2 * MAX_PARSED)) == ["ls " + "a" * (2 * MAX_PARSED)]
    assert len(split_shell("echo '" + "a" * (2 * MAX_PARSED) + "'")) == 2


_WORDS = ["ls", "rm", "-rf", "~", "~/x", "a.py", "*.py", "x?", "X=1", "Y+=2", "git", "a=b", "%1"]
_WORDS += ["status", "--short", "-n", "3", "@x", "a,b", "a:b", "+x", "/bin/ls", "if", "time"]
_GLUE = [" ", "  ", "\t", " ; ", ";", "&&", " || ", "|", " & ", "\n", " \n", ";;", "|&", "&&&"]
_GLUE += [" $(", "$(", ")", ") ", "`", " `", "$((", "(", "$"]


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git status && git log -n 3 | git grep x; git show HEAD",
        "X=1 make  all\nls ~/x *.py",
        "a&b",
        "ls\n",
        "a || b\tc",
        "git status && git log -n 3 | git grep x; git show $(git rev-parse HEAD)",
        "X=$(curl x) make",
        "echo `id` $(a; b)x && c",
        "X=$(a)",
    ],
)
def test_the_fast_path_takes_plain_lists(command: str) -> None:
    fast = _fast_split(command)
    assert fast is not None and fast == _parse(command)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_WORDS + _GLUE), min_size=1, max_size=16).map("".join))
def test_the_fast_path_agrees_with_bashlex(command: str) -> None:
    fast = _fast_split(command)
    if fast is None:
        return
    assert fast == _parse(command), command


_PLAIN_WORDS = st.sampled_from(["ls", "rm", "-rf", "~", "a.py", "*.py", "X=1", "git", "%1"])
_QUOTED_WORDS = st.sampled_from(
    ["'a b'", '"a b"', "'rm'", '"x;y"', "r''m", "''", '""', "'$(id)'", '"*"', "X='a b'", "'X=1'"]
)
_LIST_OPS = st.sampled_from([" ; ", ";", "&&", " || ", "|", " & ", "\n"])


@st.composite
def _plain_list(draw: st.DrawFn, substitutions: bool, quotes: bool = True) -> str:
    pieces = []
    for _ in range(draw(st.integers(1, 4))):
        words = draw(st.lists(_PLAIN_WORDS, min_size=0, max_size=4))
        if quotes and not substitutions and draw(st.booleans()):
            words.insert(draw(st.integers(0, len(words))), draw(_QUOTED_WORDS))
        if substitutions and draw(st.booleans()):
            body = draw(_plain_list(False, quotes=False))
            held = draw(st.sampled_from(["$({})", "`{}`", "x$({})", "Y=$({})", "$({})z"]))
            words.insert(draw(st.integers(0, len(words))), held.format(body))
        pieces.append(draw(st.sampled_from([" ", "  ", "\t"])).join(words))
    text = pieces[0]
    for piece in pieces[1:]:
        text += draw(_LIST_OPS) + piece
    return text


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_plain_list(True), _plain_list(False)))
def test_the_fast_path_agrees_with_bashlex_on_lists_with_substitutions(command: str) -> None:
    fast = _fast_split(command)
    if fast is None:
        return
    assert fast == _parse(command), command
