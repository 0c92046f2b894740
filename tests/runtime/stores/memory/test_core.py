"""The memory backend's ``Core``: its messages-only fast path and its snapshots.

A run's per-step checkpoint (messages, no batches, record or parked run) takes
``Core.commit_messages``, one pass instead of ``prepare_commit`` + ``apply_commit``.
The property test drives two cores with the same hostile commits (repeated
message ids, tool results for unknown or same-commit calls, stale versions),
one through the fast path and one through the general path: they must accept
and refuse the same commits, with the same error, and a refused commit must
leave the thread as it was. The file backend keeps a ``Core`` as its mirror,
so this also holds for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_runtime import Command, Message, Scope, ToolCall, VersionConflict
from awaken_runtime.stores import DuplicateMessageId, InMemoryStore, UnmatchedToolResult
from awaken_runtime.stores.memory._core import Core
from awaken_store_conformance import batch, binding

_IDS = st.sampled_from([f"m{i}" for i in range(6)])
_CALLS = st.sampled_from([f"c{i}" for i in range(4)])


@st.composite
def _message(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["user", "call", "result"]))
    mid = draw(_IDS)
    if kind == "user":
        return Message.user("hi", id=mid)
    if kind == "call":
        calls = draw(st.lists(_CALLS, min_size=1, max_size=2, unique=True))
        return Message.assistant(
            None, [ToolCall(id=c, name="f", arguments={}) for c in calls], id=mid
        )
    return Message.tool(draw(_CALLS), "ok", id=mid)


_COMMITS = st.lists(
    st.tuples(st.lists(_message(), max_size=3), st.integers(min_value=-1, max_value=1)),
    max_size=12,
)


def _view(core: Core, tid: str) -> tuple[object, ...]:
    thread = core.threads[tid]
    return (
        thread.version,
        [m.id for m in thread.messages],
        sorted(thread.msg_ids),
        sorted(thread.call_ids),
    )


def _general(core: Core, tid: str, version: int, messages: list[Message]) -> int:
    b = binding(tid)
    prepared = core.prepare_commit(b, version, messages, [], None)
    return core.apply_commit(b, messages, prepared, None, time.time())


def _outcome(commit: Callable[..., int | None], *args: object) -> object:
    try:
        return commit(*args)
    except (VersionConflict, DuplicateMessageId, UnmatchedToolResult) as exc:
        return type(exc)


@settings(max_examples=150, deadline=None)
@given(_COMMITS)
def test_the_fast_path_accepts_and_refuses_what_the_general_path_does(
    commits: list[tuple[list[Message], int]],
) -> None:
    fast, general = Core(), Core()
    for core in (fast, general):  # the fast path serves stored threads only
        _general(core, "t", 0, [Message.user("first", id="first")])
    for messages, skew in commits:
        version = fast.threads["t"].version + skew  # skew != 0: a stale or future version
        before = _view(fast, "t")
        got = _outcome(fast.commit_messages, binding("t"), version, messages, time.time())
        want = _outcome(_general, general, "t", version, messages)
        assert got == want, messages
        assert _view(fast, "t") == _view(general, "t")
        if isinstance(got, type):  # refused: nothing changed
            assert _view(fast, "t") == before


def test_the_fast_path_leaves_a_new_thread_to_the_general_path() -> None:
    core = Core()
    assert core.commit_messages(binding("new"), 0, [Message.user("q")], time.time()) is None
    assert "new" not in core.threads


async def test_a_snapshot_is_the_callers_to_change() -> None:
    """What a load hands out is a copy: changing it changes no later load."""
    store = InMemoryStore()
    b = binding("t")
    await store.commit(b, 0, [Message.user("q", id="q")], [batch(Command.set("n", 1))])
    snap = await store.load(b)
    snap.messages.append(Message.user("smuggled"))
    snap.state[(Scope.THREAD, "n")] = 99
    store.messages("t").clear()
    store.thread_state("t").clear()
    again = await store.load(b)
    assert [m.id for m in again.messages] == ["q"]
    assert again.state == {(Scope.THREAD, "n"): 1}
    assert again.version == 1
