"""Safe boundaries: the cut never splits a tool call from its results (property tests)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_ext_compact import choose_cut, is_safe, safe_at_or_after, safe_at_or_before
from awaken_runtime import Message, ToolCall


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    """Random valid transcripts: user turns, text answers, tool exchanges (1-3 calls)."""
    out: list[Message] = []
    call_no = 0
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "text", "tools", "tools", "user"]))
        if kind == "user":
            out.append(Message.user("u"))
        elif kind == "text":
            out.append(Message.assistant("a"))
        else:
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_no += 1
                calls.append(ToolCall(id=f"c{call_no}", name="t"))
            out.append(Message.assistant(None, calls))
            out.extend(Message.tool(c.id, "r", name="t") for c in calls)
    return out


def no_orphans(window: Sequence[Message]) -> bool:
    """Every tool result in ``window`` follows its call inside ``window``."""
    seen: set[str] = set()
    for m in window:
        for c in m.tool_calls or ():
            seen.add(c.id)
        if m.role == "tool" and m.tool_call_id not in seen:
            return False
    return True


def last_user(messages: Sequence[Message]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return -1


@settings(max_examples=400, deadline=None)
@given(transcripts(), st.integers(0, 12), st.data())
def test_cut_is_safe_and_keeps_the_newest_user_turn(
    messages: list[Message], keep: int, data: st.DataObject
) -> None:
    n = len(messages)
    safe_starts = [i for i in range(n + 1) if is_safe(messages, i)]
    start = data.draw(st.sampled_from(safe_starts))
    user = last_user(messages)
    cut = choose_cut(messages, start, user, keep)
    if cut is None:
        return
    assert start < cut <= min(n - keep, n - 1)
    assert is_safe(messages, cut)
    assert no_orphans(messages[cut:])
    if user >= start:
        assert cut <= user  # the tail reaches back to the newest user message


@settings(max_examples=400, deadline=None)
@given(transcripts(), st.data())
def test_every_safe_boundary_leaves_no_orphans(
    messages: list[Message], data: st.DataObject
) -> None:
    n = len(messages)
    b = data.draw(st.integers(0, n))
    after = safe_at_or_after(messages, b)
    assert after >= b and is_safe(messages, after)
    assert no_orphans(messages[after:])
    before = safe_at_or_before(messages, min(b, n - 1), 0) if n else 0
    assert before <= b and is_safe(messages, before)
    assert no_orphans(messages[before:])


def test_cut_moves_back_before_a_tool_exchange() -> None:
    calls = [ToolCall(id="a", name="t"), ToolCall(id="b", name="t")]
    messages = [
        Message.user("q1"),
        Message.assistant("x"),
        Message.user("q2"),
        Message.assistant(None, calls),
        Message.tool("a", "ra"),
        Message.tool("b", "rb"),
        Message.assistant("done"),
    ]
    # keep 2 -> raw cut at 5 (a tool result) -> moved back to the assistant call at 3,
    # and not past the newest user message (2).
    assert choose_cut(messages, 0, 2, 2) == 2
    assert choose_cut(messages, 0, -1, 2) == 3
    assert choose_cut(messages, 3, -1, 2) is None
