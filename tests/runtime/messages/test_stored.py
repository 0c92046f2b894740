"""Stored messages decoded when first read, and transcripts built on them.

A lazy transcript must answer every question exactly as one built from the
decoded list (windows, views, ids, the newest user message, appends and
rollbacks), decode about what is read (a backward scan in a few calls), and
fail where a damaged row is read, leaving later rows readable.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awaken_runtime import KeepAll, KeepLast, Message, ToolCall, Transcript
from awaken_runtime.messages import _stored
from awaken_runtime.messages._stored import StoredMessages


class Rows:
    """A decoder over stored JSON, counting what it was asked to decode."""

    def __init__(self, messages: list[Message], bad: frozenset[int] = frozenset()) -> None:
        self.bodies = [
            "not json" if i in bad else m.model_dump_json() for i, m in enumerate(messages)
        ]
        self.calls: list[tuple[int, int]] = []

    def decode(self, rows: list[Any], first: int) -> list[Message]:
        self.calls.append((first, first + len(rows)))
        return [Message.model_validate_json(body) for body in rows]

    def stored(self) -> StoredMessages:
        return StoredMessages.lazy(list(self.bodies), self.decode)

    @property
    def decoded(self) -> int:
        return sum(b - a for a, b in self.calls)


def thread(n: int) -> list[Message]:
    """User turns, tool exchanges and answers, as runs leave them."""
    out: list[Message] = []
    i = 0
    while len(out) < n:
        if i % 3 == 0:
            out.append(Message.user(f"q{i}"))
        elif i % 3 == 1:
            call = ToolCall(id=f"c{i}", name="f", arguments={"i": i})
            out += [Message.assistant(None, [call]), Message.tool(call.id, "ok")]
        else:
            out.append(Message.assistant(f"a{i}"))
        i += 1
    return out[:n]


def test_a_stored_sequence_equals_its_list_and_decodes_on_first_read() -> None:
    messages = thread(10)
    rows = Rows(messages)
    stored = rows.stored()
    assert len(stored) == 10 and stored.undecoded == 10 and rows.calls == []
    assert stored[-1] == messages[-1]
    assert stored.undecoded == 0  # a short thread: one call decodes all of it
    assert stored == messages and list(stored) == messages and stored[2:5] == messages[2:5]
    assert stored != messages[:-1] and stored != "messages"
    with pytest.raises(IndexError):
        stored[10]


def test_copies_share_decoded_messages_but_not_growth() -> None:
    messages = thread(200)
    rows = Rows(messages)
    kept = rows.stored()
    handed = kept.copy()
    assert handed[-1] is kept[-1]  # decoded once, for both
    extra = Message.user("new")
    kept.extend([extra])
    assert len(kept) == 201 and len(handed) == 200 and kept[-1] is extra
    list(handed)
    assert kept.undecoded == 0 and kept[:200] == messages


def test_a_backward_scan_decodes_what_it_reads_in_a_few_calls() -> None:
    rows = Rows(thread(10_000))
    stored = rows.stored()
    for i, _message in zip(range(9_999, 9_000, -1), reversed(stored), strict=False):
        assert stored.undecoded <= i
    # ~1,000 read from the end: decoded in doubling stretches, at most twice what was read.
    assert rows.decoded <= 2_048 and len(rows.calls) <= 6


def test_a_damaged_row_fails_its_readers_only_and_stays_undecoded() -> None:
    messages = thread(300)
    rows = Rows(messages, bad=frozenset({250}))
    stored = rows.stored()
    assert stored[299] == messages[299]
    assert stored[251] == messages[251]  # the stretch holding 250 failed; 251 still reads
    for _ in range(2):
        with pytest.raises(ValueError):
            stored[250]
    with pytest.raises(ValueError):
        list(stored)
    assert stored.undecoded == 251
    assert Transcript(rows.stored()).window(KeepLast(keep_last=40)).as_list() == messages[-40:]


def test_a_transcript_on_stored_messages_decodes_only_its_window() -> None:
    messages = thread(10_000)
    rows = Rows(messages)
    transcript = Transcript(rows.stored())
    assert transcript.last_user_index == max(i for i, m in enumerate(messages) if m.role == "user")
    cut = messages[9_979].id  # a summary covering all but the last 20
    window = transcript.window(KeepAll(), after_id=cut)
    assert window.as_list() == messages[9_980:]
    assert rows.decoded <= 256
    full = transcript.view()
    assert full[5] == messages[5] and list(full) == messages and rows.decoded == 10_000


def test_a_transcript_for_the_whole_thread_decodes_it_once_across_runs() -> None:
    messages = thread(500)
    rows = Rows(messages)
    kept = rows.stored()
    first = Transcript(kept.copy())
    assert first.headed([]).as_list() == messages
    second = Transcript(kept.copy())  # a later run of the same process
    assert list(second.view()) == messages and rows.decoded == 500


def test_loads_copying_while_runs_decode_always_see_decoded_messages() -> None:
    messages = thread(3_000)
    rows = Rows(messages)
    kept = rows.stored()
    errors: list[BaseException] = []
    done = threading.Event()

    def load_side() -> None:
        try:
            while not done.is_set():
                items, lo, _source = kept.transcript_items()
                assert all(m is not None for m in items[lo:])
                assert all(m is None for m in items[:lo])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    reader = threading.Thread(target=load_side)
    reader.start()
    try:
        for start in range(2_999, -7, -7):
            Transcript(kept.copy()).view(max(start, 0)).as_list()
    finally:
        done.set()
        reader.join()
    assert not errors and kept.undecoded == 0 and list(kept) == messages


# -- a lazy transcript answers exactly as one built from the list ----------------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("view"), st.integers(0, 60), st.integers(0, 60)),
        st.tuples(st.just("item"), st.integers(-60, 59)),
        st.tuples(st.just("keep_last"), st.integers(1, 70)),
        st.tuples(st.just("after"), st.integers(-5, 65)),
        st.tuples(st.just("index_of"), st.integers(-5, 65)),
        st.tuples(st.just("reversed"), st.integers(0, 70)),
        st.tuples(st.just("headed"), st.just(0)),
        st.tuples(st.just("append"), st.sampled_from(["user", "assistant"])),
        st.tuples(st.just("rollback"), st.just(0)),
        st.tuples(st.just("commit"), st.just(0)),
    ),
    max_size=25,
)


def _answer(t: Transcript, ids: list[str], op: tuple[Any, ...]) -> Any:
    kind = op[0]
    n = len(t)
    if kind == "view":
        lo, hi = sorted((min(op[1], n), min(op[2], n)))
        view = t.view(lo, hi)
        return view.as_list(), list(view), list(view[-3:])
    if kind == "item":
        return t.view()[op[1]] if -n <= op[1] < n else None
    if kind == "keep_last":
        window = t.window(KeepLast(keep_last=op[1]))
        return window.start, list(window)
    if kind == "after":
        target = ids[op[1]] if 0 <= op[1] < len(ids) else "no-such-id"
        window = t.window(KeepAll(), after_id=target)
        return window.start, window.as_list()
    if kind == "index_of":
        return t.index_of(ids[op[1]] if 0 <= op[1] < len(ids) else "missing")
    if kind == "reversed":
        return [m.id for m, _ in zip(reversed(t.view()), range(op[1]), strict=False)]
    if kind == "headed":
        return t.headed([Message.system("s", id="system")]).as_list()
    if kind == "append":
        message = Message(role=op[1], content="new")
        ids.append(message.id)
        t.append(message)
        return t.last_user_index
    if kind == "rollback":
        t.rollback()
        del ids[len(t) :]
        return t.last_user_index, t.uncommitted()
    t.mark_committed()
    return t.committed


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(0, 60),
    users_at=st.sets(st.integers(0, 59)),
    chunk=st.integers(1, 8),
    ops=OPS,
)
def test_property_a_lazy_transcript_answers_like_an_eager_one(
    size: int, users_at: set[int], chunk: int, ops: list[tuple[Any, ...]]
) -> None:
    # Small decode stretches, so the short threads here pass through partly decoded states.
    saved, _stored._MIN_CHUNK = _stored._MIN_CHUNK, chunk
    try:
        _compare(size, users_at, ops)
    finally:
        _stored._MIN_CHUNK = saved


def _compare(size: int, users_at: set[int], ops: list[tuple[Any, ...]]) -> None:
    # Any shape, including threads without a user message and windows cut inside tool results.
    messages = [Message.user(f"u{i}") if i in users_at else m for i, m in enumerate(thread(size))]
    eager, lazy = Transcript(messages), Transcript(Rows(messages).stored())
    eager_ids, lazy_ids = [m.id for m in messages], [m.id for m in messages]
    assert lazy.last_user_index == eager.last_user_index and len(lazy) == len(eager)
    for op in ops:
        if op[0] == "append":  # the same message into both
            message = Message(role=op[1], content="new")
            for t, ids in ((eager, eager_ids), (lazy, lazy_ids)):
                ids.append(message.id)
                t.append(message)
            assert lazy.last_user_index == eager.last_user_index
            continue
        assert _answer(lazy, lazy_ids, op) == _answer(eager, eager_ids, op), op
