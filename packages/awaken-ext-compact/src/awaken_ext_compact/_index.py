"""``ThreadTokens``: running token sums over one thread's transcript.

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

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Sequence

from awaken_runtime import Message

from ._counter import TokenCounter

__all__ = ["ThreadIndexes", "ThreadTokens"]


class ThreadTokens:
    """Token prefix sums, id positions and oversized tool results of one thread.

    ``big_limit`` (if set) cuts tool results longer than that many tokens:
    their positions are in ``big``, their cut text in :meth:`replacements`,
    and the sums count the cut text. ``last_cut`` is how many results the
    latest :meth:`sync` cut.
    """

    __slots__ = (
        "_cut_text",
        "big",
        "big_limit",
        "counter",
        "ids",
        "last_cut",
        "last_user",
        "pos",
        "prefix",
    )

    def __init__(self, counter: TokenCounter, big_limit: int | None = None) -> None:
        self.counter = counter
        self.big_limit = big_limit
        self.ids: list[str] = []
        self.prefix: list[int] = [0]
        self.pos: dict[str, int] = {}
        self.last_user = -1
        self.big: list[int] = []
        self._cut_text: dict[int, str] = {}
        self.last_cut = 0

    def __len__(self) -> int:
        return len(self.ids)

    def sync(self, messages: Sequence[Message]) -> int:
        """Ingest messages not yet indexed; returns how many were ingested."""
        n = len(messages)
        k = len(self.ids)
        if k and (k > n or messages[k - 1].id != self.ids[k - 1]):
            k = min(k, n)
            while k and messages[k - 1].id != self.ids[k - 1]:
                k -= 1
            self._truncate(k, messages)
        count = self.counter.message
        ids, prefix, pos = self.ids, self.prefix, self.pos
        total = prefix[-1]
        limit = self.big_limit
        self.last_cut = 0
        for i in range(k, n):
            message = messages[i]
            tokens = count(message)
            if message.role == "user":
                self.last_user = i
            elif limit is not None and message.role == "tool" and tokens > limit:
                tokens = self._cut(i, message, limit)
            total += tokens
            ids.append(message.id)
            prefix.append(total)
            pos[message.id] = i
        return n - k

    def _cut(self, i: int, message: Message, limit: int) -> int:
        counter = self.counter
        head, full = counter.truncate(message.text, limit)
        text = f"{head}\n[compact: tool result cut to {limit} of {full} tokens]"
        self._cut_text[i] = text
        self.big.append(i)
        self.last_cut += 1
        return counter.count_message(message.model_copy(update={"content": text}))

    def _truncate(self, k: int, messages: Sequence[Message]) -> None:
        for message_id in self.ids[k:]:
            self.pos.pop(message_id, None)
        del self.ids[k:]
        del self.prefix[k + 1 :]
        while self.big and self.big[-1] >= k:
            self._cut_text.pop(self.big.pop(), None)
        if self.last_user >= k:
            self.last_user = -1
            for i in range(k - 1, -1, -1):
                if messages[i].role == "user":
                    self.last_user = i
                    break

    def tokens(self, start: int, stop: int | None = None) -> int:
        """Tokens of messages ``[start, stop)`` as the request carries them."""
        prefix = self.prefix
        return prefix[len(prefix) - 1 if stop is None else stop] - prefix[start]

    def index_of(self, message_id: str, hint: int | None = None) -> int | None:
        """Position of ``message_id``; ``hint`` is checked first."""
        if hint is not None and 0 <= hint < len(self.ids) and self.ids[hint] == message_id:
            return hint
        return self.pos.get(message_id)

    def replacements(self, start: int, stop: int, messages: Sequence[Message]) -> dict[str, str]:
        """``{message id: cut text}`` of the tool results cut in ``[start, stop)``."""
        lo = bisect_left(self.big, start)
        hi = bisect_left(self.big, stop)
        return {messages[i].id: self._cut_text[i] for i in self.big[lo:hi]}

    def first_start_within(self, start: int, stop: int, budget: int) -> int:
        """The smallest ``d >= start`` with ``tokens(d, stop) <= budget`` (``stop`` if none)."""
        target = self.prefix[stop] - budget
        return max(start, min(stop, bisect_left(self.prefix, target, start, stop + 1)))


class ThreadIndexes:
    """Per-thread indexes, least recently used dropped beyond ``max_threads``."""

    def __init__(self, max_threads: int = 256) -> None:
        self.max_threads = max_threads
        self._items: OrderedDict[tuple[str, str, int | None], ThreadTokens] = OrderedDict()

    def get(self, thread_id: str, counter: TokenCounter, big_limit: int | None) -> ThreadTokens:
        """The index of ``thread_id`` for this encoding and truncation limit."""
        key = (thread_id, counter.name, big_limit)
        found = self._items.get(key)
        if found is None:
            found = self._items[key] = ThreadTokens(counter, big_limit)
            while len(self._items) > self.max_threads:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(key)
        return found
