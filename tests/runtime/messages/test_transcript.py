"""Transcript windows (context policies) and copy-free message views."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from awaken_runtime import (
    AgentConfig,
    ContextPolicy,
    KeepAll,
    KeepLast,
    Message,
    MessageView,
    ToolCall,
    Transcript,
)

POLICY = TypeAdapter(ContextPolicy)


def call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="f", arguments={})


def exchange(prefix: str, n: int) -> list[Message]:
    """An assistant message with ``n`` tool calls followed by its ``n`` results."""
    ids = [f"{prefix}{i}" for i in range(n)]
    return [Message.assistant(None, tool_calls=[call(i) for i in ids])] + [
        Message.tool(i, "ok") for i in ids
    ]


def users(n: int) -> list[Message]:
    return [Message.user(f"u{i}") for i in range(n)]


# --- KeepAll / KeepLast ----------------------------------------------------


def test_keep_all_window_is_whole_transcript() -> None:
    msgs = users(5)
    window = Transcript(msgs).window(KeepAll())
    assert list(window) == msgs
    assert window.start == 0


def test_keep_last_window_is_last_n_messages() -> None:
    msgs = users(10)
    window = Transcript(msgs).window(KeepLast(keep_last=3))
    assert list(window) == msgs[-3:]
    assert window.start == 7


def test_keep_last_larger_than_transcript_keeps_everything() -> None:
    msgs = users(2)
    assert list(Transcript(msgs).window(KeepLast(keep_last=50))) == msgs


def test_keep_last_of_empty_transcript_is_empty() -> None:
    assert len(Transcript().window(KeepLast(keep_last=3))) == 0


def test_keep_last_does_not_cut_between_call_and_single_result() -> None:
    msgs = [*users(3), *exchange("c", 1), Message.assistant("done")]
    # Last 2 would be [tool, assistant("done")]: the tool result would lose its call.
    window = Transcript(msgs).window(KeepLast(keep_last=2))
    assert list(window) == msgs[3:]
    assert window[0].tool_calls is not None


@pytest.mark.parametrize("keep", [1, 2, 3, 4])
def test_keep_last_does_not_cut_inside_several_tool_results(keep: int) -> None:
    msgs = [*users(3), *exchange("c", 4)]  # assistant at index 3, tools at 4..7
    window = Transcript(msgs).window(KeepLast(keep_last=keep))
    assert window.start == 3
    assert list(window) == msgs[3:]


def test_keep_last_cut_exactly_at_assistant_is_not_extended() -> None:
    msgs = [*users(3), *exchange("c", 2)]
    window = Transcript(msgs).window(KeepLast(keep_last=3))
    assert window.start == 3


def test_keep_last_window_ending_in_tool_call_keeps_following_results() -> None:
    msgs = [*users(4), *exchange("a", 2), Message.user("next"), *exchange("b", 1)]
    window = Transcript(msgs).window(KeepLast(keep_last=1))
    assert [m.role for m in window] == ["assistant", "tool"]
    assert window[1].tool_call_id == "b0"


# --- property: no tool result is separated from its call -----------------------


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    msgs: list[Message] = []
    for block in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "system", "tools"]))
        if kind == "user":
            msgs.append(Message.user("u"))
        elif kind == "assistant":
            msgs.append(Message.assistant("a"))
        elif kind == "system":
            msgs.append(Message.system("s"))
        else:
            msgs.extend(exchange(f"b{block}_", draw(st.integers(1, 4))))
    return msgs


@settings(max_examples=300)
@given(msgs=transcripts(), keep=st.integers(1, 30))
def test_property_window_never_separates_tool_results_from_their_call(
    msgs: list[Message], keep: int
) -> None:
    transcript = Transcript(msgs)
    window = list(transcript.window(KeepLast(keep_last=keep)))
    # The window is a suffix with at least the requested messages.
    assert window == msgs[len(msgs) - len(window) :]
    assert len(window) >= min(keep, len(msgs))
    # Every tool result in the window has the assistant message that called it.
    calls_in_window = {c.id for m in window if m.tool_calls for c in m.tool_calls}
    for m in window:
        if m.role == "tool":
            assert m.tool_call_id in calls_in_window
    # It only grows past `keep` to pull in such a call.
    if len(window) > keep:
        assert window[0].role == "assistant"
        assert window[0].tool_calls
        assert window[1].role == "tool"


# --- MessageView -----------------------------------------------------------


def test_view_indexing_returns_the_same_message_objects() -> None:
    msgs = users(5)
    view = Transcript(msgs).view(1, 4)
    assert len(view) == 3
    assert view[0] is msgs[1]
    assert view[-1] is msgs[3]
    assert view[-3] is msgs[1]
    assert [m.id for m in view] == [m.id for m in msgs[1:4]]


@pytest.mark.parametrize("index", [3, -4, 100])
def test_view_index_out_of_range(index: int) -> None:
    view = Transcript(users(5)).view(1, 4)
    with pytest.raises(IndexError):
        view[index]


def test_view_slice_is_a_view_not_a_copy() -> None:
    transcript = Transcript(users(10))
    view = transcript.view(2)
    sub = view[1:4]
    assert isinstance(sub, MessageView)
    assert sub.start == 3
    assert list(sub) == list(transcript.view(3, 6))
    # Shares the transcript's storage (no copy of the message list).
    assert sub._items is view._items
    tail = view[-2:]
    assert isinstance(tail, MessageView)
    assert [m.text for m in tail] == ["u8", "u9"]


def test_view_slice_edge_cases() -> None:
    view = Transcript(users(6)).view(1, 5)  # u1..u4
    assert len(view[3:1]) == 0
    assert len(view[10:]) == 0
    assert [m.text for m in view[:-1]] == ["u1", "u2", "u3"]
    assert [m.text for m in view[::2]] == ["u1", "u3"]
    assert [m.text for m in view[::-1]] == ["u4", "u3", "u2", "u1"]
    assert [m.text for m in view[1:][1:]] == ["u3", "u4"]


def test_view_is_stable_when_transcript_grows() -> None:
    transcript = Transcript(users(3))
    view = transcript.view()
    transcript.append(Message.user("later"))
    assert len(view) == 3
    assert [m.text for m in view] == ["u0", "u1", "u2"]
    assert len(transcript.view()) == 4


def test_view_supports_sequence_protocol() -> None:
    msgs = users(4)
    view = Transcript(msgs).view()
    assert msgs[2] in view
    assert view.index(msgs[2]) == 2
    assert list(reversed(view)) == msgs[::-1]


# --- HeadedView (system prompt + transcript, the plain request) ---------------


def test_headed_view_puts_the_head_first_and_matches_a_list() -> None:
    head = [Message.system("be brief")]
    msgs = users(4)
    view = Transcript(msgs).headed(head)
    expected = head + msgs
    assert len(view) == 5
    assert list(view) == expected
    assert [view[i] for i in range(-5, 5)] == expected[-5:] + expected
    assert view[0] is head[0] and view[1] is msgs[0] and view[-1] is msgs[3]
    assert view[1:3] == expected[1:3]
    assert view[::-2] == expected[::-2]
    assert list(reversed(view)) == expected[::-1]
    assert view.index(msgs[2]) == 3


@pytest.mark.parametrize("index", [5, -6])
def test_headed_view_index_out_of_range(index: int) -> None:
    view = Transcript(users(4)).headed([Message.system("s")])
    with pytest.raises(IndexError):
        view[index]


def test_headed_view_is_stable_when_transcript_grows_and_works_without_head() -> None:
    transcript = Transcript(users(2))
    view = transcript.headed([])
    transcript.append(Message.user("later"))
    assert [m.text for m in view] == ["u0", "u1"]
    assert len(transcript.headed([])) == 3


# --- Transcript bookkeeping ------------------------------------------------


def test_append_tracks_last_user_and_uncommitted() -> None:
    transcript = Transcript([Message.user("a"), Message.assistant("b")])
    assert transcript.last_user_index == 0
    assert transcript.uncommitted() == []
    new = Message.user("c")
    transcript.append(new)
    transcript.append(Message.assistant("d"))
    assert transcript.last_user_index == 2
    assert [m.text for m in transcript.uncommitted()] == ["c", "d"]
    transcript.mark_committed()
    assert transcript.uncommitted() == []


def test_rollback_drops_only_uncommitted_messages() -> None:
    committed = [Message.user("a"), Message.assistant("b")]
    transcript = Transcript(committed)
    transcript.append(Message.user("c"))
    transcript.rollback()
    assert list(transcript.view()) == committed
    assert transcript.last_user_index == 0


# --- policy parsing --------------------------------------------------------


def test_policy_from_config_string_keep_all() -> None:
    assert POLICY.validate_python("keep_all") == KeepAll()


def test_policy_from_config_table_keep_last() -> None:
    assert POLICY.validate_python({"keep_last": 20}) == KeepLast(keep_last=20)


def test_policy_from_tagged_form_and_instances() -> None:
    assert POLICY.validate_python({"kind": "keep_last", "keep_last": 5}) == KeepLast(keep_last=5)
    assert POLICY.validate_python({"kind": "keep_all"}) == KeepAll()
    assert POLICY.validate_python(KeepLast(keep_last=2)) == KeepLast(keep_last=2)


def test_policy_json_round_trip() -> None:
    policy = KeepLast(keep_last=7)
    assert POLICY.validate_json(POLICY.dump_json(policy)) == policy


@pytest.mark.parametrize("bad", [{"keep_last": 0}, {"keep_last": "many"}, "keep_some", 5])
def test_bad_policy_values_are_rejected(bad: object) -> None:
    with pytest.raises(ValidationError):
        POLICY.validate_python(bad)


def test_agent_config_parses_policy_forms() -> None:
    base = {"id": "a", "model_binding": "m"}
    assert AgentConfig(**base).context_policy == KeepAll()
    cfg = AgentConfig.model_validate({**base, "context_policy": {"keep_last": 20}})
    assert cfg.context_policy == KeepLast(keep_last=20)
    cfg = AgentConfig.model_validate({**base, "context_policy": "keep_all"})
    assert cfg.context_policy == KeepAll()


def test_chain_view_indexes_across_segments_and_skips_empty_ones() -> None:
    from awaken_runtime.messages._transcript import ChainView

    a, b = users(2), users(3)
    view = ChainView([a, [], Transcript(b).view(1), []])
    expected = a + b[1:]
    assert len(view) == 4 and list(view) == expected
    assert [view[i] for i in range(-4, 4)] == expected + expected
    assert view[1:] == expected[1:]
    with pytest.raises(IndexError):
        view[4]
