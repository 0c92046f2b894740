"""KeptThreads: what a database store keeps of decoded threads, within its bounds."""

from __future__ import annotations

from awaken_runtime import Message, ToolCall
from awaken_runtime.stores import KeptThread, KeptThreads


def _thread(n: int, tag: str = "m") -> list[Message]:
    return [Message.user(f"{tag}{i}") for i in range(n)]


def test_extending_leaves_the_kept_record_as_it_was() -> None:
    base = KeptThread.read(_thread(2), edits=0, first=1, last=2)
    call = Message.assistant(None, [ToolCall(id="c1", name="f")])
    grown = base.extended([call], edits=0, last=3)
    assert len(base.messages) == 2 and base.call_ids == frozenset() and base.last == 2
    assert grown.messages == [*base.messages, call] and grown.call_ids == {"c1"}
    assert (grown.first, grown.last) == (1, 3)
    assert base.extended([], edits=1, last=2).call_ids is base.call_ids


def test_the_least_recently_kept_go_first_past_either_bound() -> None:
    kept = KeptThreads(max_threads=2, max_messages=5)
    kept.keep("a", KeptThread.read(_thread(2), 0, 1, 2))
    kept.keep("b", KeptThread.read(_thread(2), 0, 1, 2))
    kept.keep("c", KeptThread.read(_thread(1), 0, 1, 1))  # three threads: "a" goes
    assert kept.get("a") is None and kept.get("b") and kept.get("c")
    kept.keep("c", KeptThread.read(_thread(4), 0, 1, 4))  # replaced: 2 + 4 > 5, "b" goes
    assert kept.get("b") is None and kept.get("c") is not None
    assert kept.forget("c") is not None and kept.forget("c") is None
    kept.keep("d", KeptThread.read(_thread(5), 0, 1, 5))  # the count went back to 0
    assert kept.get("d") is not None
