"""The append-only transcript, context policies, and copy-free message views."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, islice
from typing import Annotated, Literal, TypeAlias, overload

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ._message import Message
from ._stored import StoredMessages, _Rows

__all__ = ["ContextPolicy", "KeepAll", "KeepLast", "MessageView", "Transcript"]


class KeepAll(BaseModel):
    """Send the whole transcript to the model."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["keep_all"] = "keep_all"


class KeepLast(BaseModel):
    """Send at most the last ``keep_last`` messages (more if a tool exchange straddles the cut)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: Literal["keep_last"] = "keep_last"
    keep_last: int = Field(ge=1)


def _coerce_policy(value: object) -> object:
    # Config files may write `context_policy = "keep_all"` or `{keep_last = 20}`.
    if value == "keep_all":
        return {"kind": "keep_all"}
    if isinstance(value, dict) and "kind" not in value and "keep_last" in value:
        return {"kind": "keep_last", **value}
    return value


ContextPolicy: TypeAlias = Annotated[
    KeepAll | KeepLast, Field(discriminator="kind"), BeforeValidator(_coerce_policy)
]
"""How the model-visible window of the transcript is bounded."""


class MessageView(Sequence[Message]):
    """A read-only window ``[start, stop)`` over a transcript, without copying.

    ``lazy`` is the transcript when messages of the window may still be
    undecoded (see ``StoredMessages``): reading them decodes them first.
    """

    __slots__ = ("_items", "_lazy", "_start", "_stop")

    def __init__(
        self, items: list[Message], start: int, stop: int, lazy: Transcript | None = None
    ) -> None:
        self._items = items
        self._start = start
        self._stop = stop
        self._lazy = lazy

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            lo, hi, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(lo, hi, step)]
            return MessageView(self._items, self._start + lo, self._start + max(lo, hi), self._lazy)
        n = self._stop - self._start
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("message index out of range")
        index += self._start
        lazy = self._lazy
        if lazy is not None and index < lazy._lo:
            lazy._reach(index)
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        start, stop = self._start, self._stop
        lazy = self._lazy
        if lazy is not None and start < lazy._lo:
            lazy.decode_from(start)
        # C-level either way (the executor walks every request's messages each step).
        # ``islice`` steps over the first ``start`` messages one by one: a window late in
        # a long transcript (a compacted one) is copied instead, in O(its length).
        if start > stop - start:
            return iter(self._items[start:stop])
        return islice(self._items, start, stop)

    @property
    def start(self) -> int:
        """Index of the first message of the view in the transcript."""
        return self._start

    def as_list(self) -> list[Message]:
        """The messages as a new list (one C-level copy)."""
        lazy = self._lazy
        if lazy is not None and self._start < lazy._lo:
            lazy.decode_from(self._start)
        return self._items[self._start : self._stop]


class JoinedView(Sequence[Message]):
    """A read-only message sequence joined from parts, without copying.

    Holds the length and the indexing rules (negative indexes, bounds, slices
    as lists); a subclass sets ``_len`` and finds message ``index`` in ``_at``.
    """

    __slots__ = ("_len",)
    _len: int

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("message index out of range")
        return self._at(index)

    def _at(self, index: int) -> Message:
        """Message ``index``, with ``0 <= index < len(self)``."""
        raise NotImplementedError


class ChainView(JoinedView):
    """A read-only concatenation of message sequences."""

    __slots__ = ("_segments",)

    def __init__(self, segments: Sequence[Sequence[Message]]) -> None:
        kept: list[Sequence[Message]] = []
        total = 0
        for segment in segments:  # a plain loop: built once per request, every step
            n = len(segment)
            if n:
                kept.append(segment)
                total += n
        self._segments = kept
        self._len = total

    def _at(self, index: int) -> Message:
        for segment in self._segments:
            n = len(segment)
            if index < n:
                return segment[index]
            index -= n
        raise IndexError("message index out of range")  # pragma: no cover

    def __iter__(self) -> Iterator[Message]:
        return chain.from_iterable(self._segments)

    def as_list(self) -> list[Message]:
        """The messages as a new list (C-level copies of each segment)."""
        out: list[Message] = []
        for segment in self._segments:
            out += as_list(segment)
        return out


class HeadedView(JoinedView):
    """``head`` followed by the first ``stop`` transcript messages, without copying.

    The messages of a request without context entries (the system prompt, then
    the whole transcript): one small object per step instead of a chain of views.
    """

    __slots__ = ("_head", "_items", "_lazy", "_split")

    def __init__(
        self,
        head: Sequence[Message],
        items: list[Message],
        stop: int,
        lazy: Transcript | None = None,
    ) -> None:
        self._head = head
        self._items = items
        self._split = len(head)
        self._len = self._split + stop
        self._lazy = lazy

    def _decoded(self) -> list[Message]:
        lazy = self._lazy
        if lazy is not None and lazy._lo:
            lazy.decode_from(0)
        return self._items

    def _at(self, index: int) -> Message:
        if index < self._split:
            return self._head[index]
        index -= self._split
        lazy = self._lazy
        if lazy is not None and index < lazy._lo:
            lazy._reach(index)
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        return chain(self._head, islice(self._decoded(), self._len - self._split))

    def as_list(self) -> list[Message]:
        """The messages as a new list (C-level copies)."""
        return [*self._head, *self._decoded()[: self._len - self._split]]

    def parts(self) -> tuple[Sequence[Message], list[Message], int]:
        """``(head, transcript list, stop)``: the view is ``head + transcript[:stop]``."""
        return self._head, self._decoded(), self._len - self._split


def as_list(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as a list: the list itself, a view's C-level copy, else ``list()``."""
    if isinstance(messages, list):
        return messages
    if isinstance(messages, (MessageView, ChainView, HeadedView)):
        return messages.as_list()
    return list(messages)


class Transcript:
    """The append-only message history of a thread, as seen by one run.

    ``committed`` counts the messages the thread store already holds; the loop
    hands the rest to the store at each checkpoint. Built from a store's
    :class:`~._stored.StoredMessages`, it decodes stored messages only when
    something reads them (a window, a view, a search for an id), from the end.
    """

    __slots__ = ("_ids", "_ids_lo", "_items", "_last_user", "_lo", "_rows", "committed")

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        items: list[Message]
        self._rows: _Rows | None = None
        self._lo = 0
        """Messages below this index are not decoded yet (``None`` in ``_items``)."""
        if isinstance(messages, StoredMessages):
            # Entries below ``_lo`` are None until decoded; every read checks ``_lo`` first.
            items, self._lo, self._rows = messages.transcript_items()  # type: ignore[assignment]
        else:
            items = list(messages)
        self._items = items
        self._ids: dict[str, int] | None = None  # built on first index_of(), from the end
        self._ids_lo = 0
        self.committed = len(self._items)
        self._last_user = self._find_last_user()

    def decode_from(self, start: int) -> None:
        """Decode every stored message from ``start`` on now: a request decodes what it will
        send, so a row that does not decode fails there (``StoreCorrupt``), not in whoever
        reads it later."""
        rows = self._rows
        lo = self._lo
        if rows is None or start >= lo:
            return
        rows.decode_from(start)
        self._items[start:lo] = rows.items[start:lo]  # type: ignore[assignment]  # decoded
        self._lo = start
        if not start:
            self._rows = None

    def _reach(self, index: int) -> None:
        """Decode message ``index`` and at least as many as are decoded already (a backward
        scan decodes about what it reads, in a few calls)."""
        rows = self._rows
        if rows is not None and index < self._lo:
            rows.reach(index)  # rows.lo <= index now (other transcripts may have gone further)
            self.decode_from(rows.lo)

    def _find_last_user(self) -> int:
        items = self._items
        for i in range(len(items) - 1, -1, -1):
            if i < self._lo:
                self._reach(i)
            if items[i].role == "user":
                return i
        return -1

    def __len__(self) -> int:
        return len(self._items)

    def append(self, message: Message) -> None:
        """Add a message at the end. Nothing is ever removed or rewritten."""
        if message.role == "user":
            self._last_user = len(self._items)
        if self._ids is not None:
            self._ids[message.id] = len(self._items)
        self._items.append(message)

    @property
    def last_user_index(self) -> int:
        """Index of the newest user message, or -1."""
        return self._last_user

    def view(self, start: int = 0, stop: int | None = None) -> MessageView:
        """A copy-free view of ``[start, stop)``."""
        return MessageView(
            self._items,
            start,
            len(self._items) if stop is None else stop,
            self if start < self._lo else None,
        )

    def headed(self, head: Sequence[Message]) -> HeadedView:
        """``head`` followed by the whole transcript as it is now, copy-free."""
        return HeadedView(head, self._items, len(self._items), self if self._lo else None)

    def uncommitted(self) -> list[Message]:
        """Messages appended since the last checkpoint."""
        return self._items[self.committed :]

    def index_of(self, message_id: str) -> int | None:
        """Position of a message by id (the index is built from the end, as far as needed)."""
        ids = self._ids
        if ids is None:
            ids = self._ids = {}
            self._ids_lo = len(self._items)
        items = self._items
        while True:
            lo = self._lo
            if self._ids_lo > lo:
                for i in range(self._ids_lo - 1, lo - 1, -1):
                    ids.setdefault(items[i].id, i)  # a repeated id: the later message wins
                self._ids_lo = lo
            found = ids.get(message_id)
            if found is not None or not lo:
                return found
            self._reach(lo - 1)

    def rollback(self) -> None:
        """Drop messages appended since the last checkpoint (a step that did not finish)."""
        if self._ids is not None:
            for message in self._items[self.committed :]:
                self._ids.pop(message.id, None)
        del self._items[self.committed :]
        self._last_user = self._find_last_user()

    def mark_committed(self) -> None:
        """Record that every current message is now held by the store."""
        self.committed = len(self._items)

    def window_start(self, policy: KeepAll | KeepLast, after_id: str | None = None) -> int:
        """First index the policy keeps, moved back so no tool result loses its call.

        ``after_id`` (a request-window override) starts the window after that
        message when that is later than the policy's start.
        """
        items = self._items
        start = 0 if isinstance(policy, KeepAll) else max(0, len(items) - policy.keep_last)
        if after_id is not None:
            cut = self.index_of(after_id)
            if cut is not None:
                start = max(start, min(cut + 1, len(items)))
        # A tool result needs the assistant message that issued the call.
        while 0 < start < len(items):
            if start < self._lo:
                self._reach(start)
            if items[start].role != "tool":
                break
            start -= 1
        return start

    def window(self, policy: KeepAll | KeepLast, after_id: str | None = None) -> MessageView:
        """The model-visible window under ``policy`` (and an optional override)."""
        return self.view(self.window_start(policy, after_id))
