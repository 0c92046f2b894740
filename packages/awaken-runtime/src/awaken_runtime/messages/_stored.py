"""A thread's messages as a store read them back, each decoded when first read.

Reading a stored row is cheap; turning it into a validated :class:`Message`
costs several times as much. A run reads the messages it sends: the window
of its context policy, or a compaction summary's uncovered tail, so a store
hands out the rows undecoded (:meth:`StoredMessages.lazy`) and a message is
decoded the first time anything reads it. Decoded messages are shared by
every copy a store hands out, so a process decodes each stored message at
most once, whichever run reads it first.

Decoding works from the end of the thread towards its start: the rows
``[0, lo)`` are still raw and ``[lo, n)`` are decoded. Reading message ``i``
below ``lo`` decodes ``[i', lo)`` with ``i' <= i``, at least doubling the
decoded part, so a backward scan (the newest user message, a summary's cut)
decodes about what it reads and costs a few validation calls, not one per
message. Messages appended after the load (:meth:`StoredMessages.extend`)
are decoded already.

A row that does not decode raises whatever the store's decoder raises (the
stores raise ``StoreCorrupt`` naming the thread and the row) where it is
read, and nothing is marked decoded: reading it again fails the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any, overload

from ._message import Message

__all__ = ["Decoder", "StoredMessages"]

Decoder = Callable[[list[Any], int], list[Message]]
"""``decode(rows, first)``: the messages of ``rows``, the raw rows ``first, first + 1, ...``
of the thread (0-based), in order; raises on a row that is not a message."""

_MIN_CHUNK = 64
"""The fewest rows one point read decodes (a validation call has a fixed cost)."""


class _Rows:
    """The lazily decoded rows of one load, shared by every copy of its messages."""

    __slots__ = ("decode", "items", "lo", "lock", "raw")

    def __init__(self, raw: list[Any], decode: Decoder) -> None:
        self.raw = raw
        self.items: list[Message | None] = [None] * len(raw)
        """Decoded messages; ``items[lo:]`` are all set, ``items[:lo]`` all ``None``."""
        self.lo = len(raw)
        self.decode = decode
        # Loads (on a store's thread) copy what is decoded while runs (on the event loop)
        # decode more; ``items`` and ``lo`` change together under the lock.
        self.lock = threading.Lock()

    def decode_from(self, start: int) -> None:
        """Decode the rows ``[start, lo)`` (nothing if they are decoded already)."""
        with self.lock:
            lo = self.lo
            if start >= lo:
                return
            messages = self.decode(self.raw[start:lo], start)
            if len(messages) != lo - start:
                raise RuntimeError(
                    f"a stored-message decoder returned {len(messages)} messages for "
                    f"{lo - start} rows; it must return one message per row"
                )
            self.items[start:lo] = messages
            self.raw[start:lo] = [None] * (lo - start)  # the rows are no longer needed
            self.lo = start

    def reach(self, index: int) -> None:
        """Decode row ``index`` and at least as many rows again as are decoded already.

        If a row below ``index`` in that stretch does not decode, only ``[index, lo)``
        is decoded: a damaged row fails whoever reads it, not the readers of later rows.
        """
        lo = self.lo
        if index >= lo:
            return
        start = max(0, min(index, lo - max(_MIN_CHUNK, len(self.items) - lo)))
        try:
            self.decode_from(start)
        except Exception:
            if start == index:
                raise
            self.decode_from(index)

    def copy(self) -> tuple[list[Message | None], int]:
        """A copy of ``items`` and its ``lo``, taken together."""
        with self.lock:
            return self.items.copy(), self.lo


class StoredMessages(Sequence[Message]):
    """A thread's messages as a store loaded them: raw rows decoded on first read.

    A read-only ``Sequence[Message]`` that compares equal to a list of the same
    messages. The store keeps one and grows it with :meth:`extend`; it hands
    out :meth:`copy` s, which share every decoded message but not later growth.
    """

    __slots__ = ("_rows", "_tail")

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        self._rows: _Rows | None = None
        self._tail: list[Message] = list(messages)

    @classmethod
    def lazy(cls, rows: list[Any], decode: Decoder) -> StoredMessages:
        """Messages whose rows ``decode`` turns into messages when first read.

        ``rows`` becomes the sequence's own (decoded rows are dropped from it).
        """
        out = cls()
        if rows:
            out._rows = _Rows(rows, decode)
        return out

    def _split(self) -> int:
        rows = self._rows
        return len(rows.items) if rows is not None else 0

    def __len__(self) -> int:
        return self._split() + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        rows = self._rows
        if isinstance(index, slice):
            lo, hi, step = index.indices(len(self))
            if rows is not None and lo < rows.lo and lo < hi:
                rows.decode_from(lo)
            return [self[i] for i in range(lo, hi, step)]
        split = self._split()
        n = split + len(self._tail)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("message index out of range")
        if index >= split:
            return self._tail[index - split]
        assert rows is not None
        rows.reach(index)
        item = rows.items[index]
        assert item is not None
        return item

    def __iter__(self) -> Iterator[Message]:
        rows = self._rows
        if rows is None:
            return iter(self._tail)
        rows.decode_from(0)
        return chain(rows.items, self._tail)  # type: ignore[arg-type]  # all decoded now

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredMessages | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"StoredMessages({len(self)} messages, {self.undecoded} not decoded yet)"

    @property
    def undecoded(self) -> int:
        """How many messages have not been decoded yet (read one and it is)."""
        rows = self._rows
        return rows.lo if rows is not None else 0

    def extend(self, messages: Sequence[Message]) -> None:
        """Append decoded messages (the store's own copy; copies handed out do not grow)."""
        self._tail.extend(messages)

    def copy(self) -> StoredMessages:
        """A copy that shares every decoded message and does not grow with this one."""
        out = StoredMessages.__new__(StoredMessages)
        out._rows = self._rows
        out._tail = self._tail.copy()
        return out

    def transcript_items(self) -> tuple[list[Message | None], int, _Rows | None]:
        """For a transcript: a new list of the messages (``None`` where not decoded yet),
        the index below which they are ``None``, and the rows that decode them."""
        rows = self._rows
        if rows is None:
            return list(self._tail), 0, None
        items, lo = rows.copy()
        items += self._tail
        return items, lo, rows if lo else None
