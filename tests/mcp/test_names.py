"""Namespaced tool ids stay within the providers' rules and never collide."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from awaken_mcp import tool_id
from awaken_runtime import ToolDescriptor

RULE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_plain_names_keep_their_spelling() -> None:
    assert tool_id("time", "get_current_time") == "time__get_current_time"
    assert tool_id("git-1", "log") == "git-1__log"


def test_odd_spellings_are_sanitized_and_told_apart() -> None:
    dotted = tool_id("fs", "read.file")
    spaced = tool_id("fs", "read file")
    assert RULE.match(dotted) and RULE.match(spaced)
    assert dotted.startswith("fs__read_file_") and dotted != spaced
    # a sanitized name never equals the clean name it resembles
    assert tool_id("fs", "read_file") not in {dotted, spaced}
    assert RULE.match(tool_id("fs", "ファイル"))
    assert RULE.match(tool_id("fs", ""))


def test_long_names_are_cut_with_a_digest() -> None:
    a, b = tool_id("srv", "x" * 100 + "a"), tool_id("srv", "x" * 100 + "b")
    assert len(a) == 64 and len(b) == 64 and a != b


@given(st.text(max_size=120), st.text(max_size=120))
def test_every_name_is_a_valid_unique_descriptor_id(one: str, two: str) -> None:
    first = tool_id("server", one)
    ToolDescriptor(id=first)  # the runtime accepts it
    assert RULE.match(first)
    if one != two:
        assert first != tool_id("server", two)
