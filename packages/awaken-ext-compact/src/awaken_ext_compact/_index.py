"""``ThreadTokens``: running token sums over one thread's transcript.

``TokenSums`` holds the machinery (sync, prefix sums, checkpoint spans);
``ThreadTokens`` counts tokens with an encoding, ``BoundTokens`` (``_bound``)
sums upper bounds without tokenizing.

The transcript is append-only, so the index only ever ingests the messages
added since the previous step; any span's token count is then a difference
of two prefix sums. A step therefore costs O(new messages), not O(thread).
If the transcript it sees no longer starts with what it indexed (a rolled
back step), it drops the diverging tail and re-ingests from there.

With a tool-result cap, a longer tool result is cut when it is ingested
(once) and counted as the cut text the request will carry, so every sum is
what the request costs.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import accumulate

from awaken_runtime import Message, MessageView

from ._counter import TokenCounter

__all__ = ["ThreadIndexes", "ThreadTokens", "TokenSums"]


class TokenSums:
    """Prefix sums, id positions and oversized tool results of one thread.

    The sums cover the messages from ``lo`` on (``lo`` is where the first
    request this index served started: the messages a summary covers are
    never counted); a query further back counts what it needs then. After
    :meth:`restore` a checkpointed span ``[anchor, lo)`` is known as one
    total (``lump``) and counted message by message only if a query needs
    a position inside it.

    What one message costs is the subclass's: :class:`ThreadTokens` counts
    tokens, ``BoundTokens`` (in ``_bound``) an upper bound of them. A tool
    result costing more than ``big_limit`` (if set) goes through ``_cut``;
    its position is then in ``big``. ``last_cut`` is how many results the
    latest :meth:`sync` cut. ``name`` says what the sums count (checkpoints
    are only taken by an index with the same name). ``checked`` is the
    checkpoint last found to describe the thread (so it is not checked again
    until the index drops counts: the thread changed).
    """

    __slots__ = (
        "_absent",
        "_count",
        "_cuts",
        "_edge",
        "_messages",
        "anchor",
        "big",
        "big_limit",
        "checked",
        "ids",
        "last_cut",
        "last_user",
        "lo",
        "lump",
        "pos",
        "prefix",
    )

    def __init__(self, count: Callable[[Message], int], big_limit: int | None = None) -> None:
        self._count = count
        self.big_limit = big_limit
        self._clear()
        self._messages: Sequence[Message] = ()

    @property
    def name(self) -> str:
        """What the sums count: an encoding's name, or a bound's."""
        raise NotImplementedError

    def _cut(self, i: int, message: Message, limit: int) -> int:
        """The cost of tool result ``i``, which costs more than ``limit`` as it is."""
        raise NotImplementedError

    def _clear(self) -> None:
        self.lo = 0
        self._edge: str | None = None  # id of message lo - 1: the history before lo
        self.anchor: int | None = None
        self.lump = 0
        self.ids: list[str] = []  # messages lo, lo + 1, ...
        self.prefix: list[int] = [0]  # prefix[j]: tokens of [lo, lo + j)
        self.pos: dict[str, int] = {}
        self.last_user = -1
        self.big: list[int] = []
        self._cuts: dict[int, tuple[int, int, str | None]] = {}  # pos -> (kept, full, text)
        self.last_cut = 0
        self.checked: object = None
        self._absent: set[str] = set()  # ids looked up before lo and not found there

    def __len__(self) -> int:
        return self.lo + len(self.ids)

    def sync(self, messages: Sequence[Message], start: int = 0) -> int:
        """Ingest messages not yet indexed; returns how many were ingested.

        ``start`` is the first position the caller needs: a new index counts
        from there, not from the beginning of the thread.
        """
        self._messages = messages
        n = len(messages)
        lo = self.lo
        if lo and (lo > n or messages[lo - 1].id != self._edge):
            self._clear()  # the history before lo changed: nothing counted holds
            lo = 0
        if lo == 0 and not self.ids and 0 < start <= n:
            self._move_lo(start)
            self.last_user = _last_user(messages, n)
            lo = start
        k = len(self.ids)
        if k and (lo + k > n or messages[lo + k - 1].id != self.ids[k - 1]):
            k = min(k, n - lo)
            while k and messages[lo + k - 1].id != self.ids[k - 1]:
                k -= 1
            self._truncate(k, messages)
        self.last_cut = 0
        return self._ingest(messages, lo + k, n)

    def _move_lo(self, lo: int) -> None:
        self.lo = lo
        self._edge = self._messages[lo - 1].id if lo else None

    def _ingest(self, messages: Sequence[Message], first: int, stop: int) -> int:
        if first >= stop:
            return 0
        if stop - first <= _FEW:
            return self._ingest_few(messages, first, stop)
        # Whole-batch passes (C-level iteration, no per-message bookkeeping in
        # Python): a new index ingests a long thread at once.
        batch = _span(messages, first, stop)  # one C-level copy, then plain list passes
        costs = list(map(self._count, batch))
        ids = [m.id for m in batch]
        roles = [m.role for m in batch]
        if "user" in roles:
            self.last_user = stop - 1 - roles[::-1].index("user")
        limit = self.big_limit
        if limit is not None and max(costs) > limit:
            for j, role in enumerate(roles):
                if role == "tool" and costs[j] > limit:
                    costs[j] = self._cut(first + j, batch[j], limit)
        sums = accumulate(costs, initial=self.prefix[-1])
        next(sums)
        self.prefix.extend(sums)
        self.ids.extend(ids)
        self.pos.update(zip(ids, range(first, stop), strict=True))
        return stop - first

    def _ingest_few(self, messages: Sequence[Message], first: int, stop: int) -> int:
        """:meth:`_ingest` for the few messages a step adds, one by one (the batch
        passes cost more in setting up than they save on two or three messages)."""
        count, limit = self._count, self.big_limit
        prefix, ids, pos = self.prefix, self.ids, self.pos
        total = prefix[-1]
        for i in range(first, stop):
            message = messages[i]
            cost = count(message)
            role = message.role
            if role == "user":
                self.last_user = i
            elif limit is not None and role == "tool" and cost > limit:
                cost = self._cut(i, message, limit)
            total += cost
            prefix.append(total)
            ids.append(message.id)
            pos[message.id] = i
        return stop - first

    def _truncate(self, k: int, messages: Sequence[Message]) -> None:
        self.checked = None
        for message_id in self.ids[k:]:
            self.pos.pop(message_id, None)
        del self.ids[k:]
        del self.prefix[k + 1 :]
        end = self.lo + k
        while self.big and self.big[-1] >= end:
            self._cuts.pop(self.big.pop(), None)
        if self.last_user >= end:
            self.last_user = _last_user(messages, min(end, len(messages)))

    def restore(
        self,
        messages: Sequence[Message],
        span: tuple[int, int, int],
        last_user: int,
        cuts: Sequence[tuple[int, int, int]],
    ) -> None:
        """Take a checkpoint (on a new index): ``span`` is ``(start, through, tokens)``,
        the tokens of messages ``[start, through]``."""
        start, through, tokens = span
        self._messages = messages
        self.anchor = start
        self._move_lo(through + 1)
        self.lump = tokens
        self.last_user = last_user
        for position, kept, full in cuts:
            self._cuts[position] = (kept, full, None)
        self.big = sorted(self._cuts)

    def _backfill(self, a: int) -> None:
        """Count messages ``[a, lo)`` one by one (a query needs positions in there)."""
        messages, lo = self._messages, self.lo
        old_ids, old_prefix = self.ids, self.prefix
        self.ids, self.prefix = [], [0]
        self._move_lo(a)
        saved_user, saved_cut = self.last_user, self.last_cut
        self._ingest(messages, a, lo)
        self.last_user, self.last_cut = max(saved_user, self.last_user), saved_cut
        counted = self.prefix[-1]
        self.ids += old_ids
        self.prefix += [counted + t for t in old_prefix[1:]]
        anchor = self.anchor
        if anchor is not None:
            if a > anchor:
                self.lump -= counted
            else:
                self.anchor, self.lump = None, 0

    def tokens(self, start: int, stop: int | None = None) -> int:
        """Tokens of messages ``[start, stop)`` as the request carries them."""
        if stop is not None and stop < self.lo:
            self._backfill(stop)
        before = 0
        if start < self.lo:
            if start == self.anchor:
                before = -self.lump  # the checkpointed span, as one total
            else:
                self._backfill(start)
        prefix, lo = self.prefix, self.lo
        end = prefix[len(prefix) - 1 if stop is None else stop - lo]
        return end - (prefix[start - lo] if start >= lo else before)

    def index_of(self, message_id: str, hint: int | None = None) -> int | None:
        """Position of ``message_id`` in what this index has seen; ``hint`` is checked first."""
        messages = self._messages
        if hint is not None and 0 <= hint < len(messages) and messages[hint].id == message_id:
            return hint
        found = self.pos.get(message_id)
        if found is None and self.lo and message_id not in self._absent:
            # Before what was counted (a summary whose position hint is stale): looked up
            # once and the answer kept, so later steps do not walk the thread again. It
            # holds while the history before lo does (else sync clears it).
            found = _find_before(messages, self.lo, message_id)
            if found is None:
                self._absent.add(message_id)
            else:
                self.pos[message_id] = found
        return found

    def cuts(self, start: int, stop: int) -> list[tuple[int, int, int]]:
        """``[position, characters kept, full tokens]`` of the results cut in ``[start, stop)``."""
        lo = bisect_left(self.big, start)
        hi = bisect_left(self.big, stop)
        return [(i, self._cuts[i][0], self._cuts[i][1]) for i in self.big[lo:hi]]

    def first_start_within(self, start: int, stop: int, budget: int) -> int:
        """The smallest ``d >= start`` with ``tokens(d, stop) <= budget`` (``stop`` if none)."""
        if start < self.lo:
            self._backfill(start)
        lo = self.lo
        target = self.prefix[stop - lo] - budget
        found = bisect_left(self.prefix, target, start - lo, stop - lo + 1) + lo
        return max(start, min(stop, found))


class ThreadTokens(TokenSums):
    """Token sums of one thread, counted with ``counter``.

    With ``big_limit`` a longer tool result is cut when it is ingested (once)
    and counted as the cut text the request will carry (:meth:`replacements`),
    so every sum is what the request costs.
    """

    __slots__ = ("counter",)

    def __init__(self, counter: TokenCounter, big_limit: int | None = None) -> None:
        super().__init__(counter.message, big_limit)
        self.counter = counter

    @property
    def name(self) -> str:
        """The encoding's name."""
        return self.counter.name

    def _cut(self, i: int, message: Message, limit: int) -> int:
        counter = self.counter
        head, full = counter.truncate(message.text, limit)
        if i not in self._cuts:
            insort(self.big, i)
        kept = len(head) if message.text.startswith(head) else -1
        text = _cut_text(head, limit, full)
        self._cuts[i] = (kept, full, text)
        self.last_cut += 1
        return counter.count_message(message.model_copy(update={"content": text}))

    def replacements(self, start: int, stop: int, messages: Sequence[Message]) -> dict[str, str]:
        """``{message id: cut text}`` of the tool results cut in ``[start, stop)``."""
        lo = bisect_left(self.big, start)
        hi = bisect_left(self.big, stop)
        return {messages[i].id: self._text(i, messages[i]) for i in self.big[lo:hi]}

    def _text(self, i: int, message: Message) -> str:
        kept, full, text = self._cuts[i]
        if text is None:
            limit = self.big_limit or 0
            if kept >= 0:
                head = message.text[:kept]
            else:
                head, full = self.counter.truncate(message.text, limit)
            text = _cut_text(head, limit, full)
            self._cuts[i] = (kept, full, text)
        return text


def _cut_text(head: str, limit: int, full: int) -> str:
    return f"{head}\n[compact: tool result cut to {limit} of {full} tokens]"


def _span(messages: Sequence[Message], first: int, stop: int) -> list[Message]:
    """Messages ``[first, stop)`` as a list, in O(stop - first).

    ``list()`` of a ``MessageView`` slice iterates an ``islice`` of the
    transcript, which steps over every message before ``first`` one by one:
    a new process ingesting the last few messages of a 10,000-message thread
    would walk all of it. The view's own copy is a C-level list slice.
    """
    part = messages[first:stop]
    if isinstance(part, list):
        return part
    if isinstance(part, MessageView):
        return part.as_list()
    return list(part)


_CHUNK = 256
_FEW = 4
"""Up to this many new messages are ingested one by one (:meth:`TokenSums._ingest_few`)."""


def _find_before(messages: Sequence[Message], stop: int, message_id: str) -> int | None:
    """Position of ``message_id`` in ``messages[:stop]``, or ``None``.

    Searched from ``stop`` backwards, a chunk (one C-level copy) at a time: the
    boundary a summary names is usually just before what the index counted.
    """
    hi = stop
    while hi > 0:
        lo = max(0, hi - _CHUNK)
        chunk = _span(messages, lo, hi)
        for j in range(len(chunk) - 1, -1, -1):
            if chunk[j].id == message_id:
                return lo + j
        hi = lo
    return None


def _last_user(messages: Sequence[Message], stop: int) -> int:
    for i in range(stop - 1, -1, -1):
        if messages[i].role == "user":
            return i
    return -1


class ThreadIndexes:
    """Per-thread indexes, least recently used dropped beyond ``max_threads``.

    Keyed by ``(thread id, name, big_limit)``: a thread may have a bound index
    and a token index (one per encoding and cut limit).
    """

    def __init__(self, max_threads: int = 256) -> None:
        self.max_threads = max_threads
        self._items: OrderedDict[tuple[str, str, int | None], TokenSums] = OrderedDict()

    def find(self, thread_id: str, name: str, big_limit: int | None) -> TokenSums | None:
        """The index of ``thread_id`` named ``name``, if this process has one."""
        key = (thread_id, name, big_limit)
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, thread_id: str, index: TokenSums) -> None:
        """Keep ``index`` for ``thread_id`` (replacing one of the same name and limit)."""
        self._items[(thread_id, index.name, index.big_limit)] = index
        self._items.move_to_end((thread_id, index.name, index.big_limit))
        while len(self._items) > self.max_threads:
            self._items.popitem(last=False)

    def drop(self, thread_id: str, name: str, big_limit: int | None) -> None:
        """Forget the index of ``thread_id`` named ``name`` (if any)."""
        self._items.pop((thread_id, name, big_limit), None)

    def get(self, thread_id: str, counter: TokenCounter, big_limit: int | None) -> ThreadTokens:
        """The token index of ``thread_id`` for this encoding and truncation limit."""
        found = self.find(thread_id, counter.name, big_limit)
        if not isinstance(found, ThreadTokens):
            found = ThreadTokens(counter, big_limit)
            self.put(thread_id, found)
        return found
