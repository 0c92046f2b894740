"""``ConvertedMessages``: each run's messages converted to OpenAI's shape once, not every step.

A step's request is the run's transcript (append-only, the same message
objects from step to step) behind a few request-only messages (the system
prompt, context entries). The cache keeps, per run, the messages it
converted (``src``) beside their dicts (``out``), and each request reuses
the runs of messages that are the very objects of ``src`` in the same
order, found by identity and confirmed by a C-level list comparison; what
is new is converted and appended. The result is exactly ``to_openai`` of
the request's messages:

* a message replaced under the same id (another object: a content
  replacement, an edited or reloaded history) is not in ``src`` by
  identity, so it is converted afresh;
* a rolled-back tail is dropped from ``src`` when other new messages take
  its place;
* a run whose calls were renamed (``PROVIDER_CALL_IDS``: the conversion of
  a tool result depends on the messages before it) reuses only a request
  that starts with all of ``src``; anything else is converted whole.

The usual request, the system prompt followed by the whole transcript (a
``HeadedView``), costs no pass over its messages at all: one C-level
comparison of the transcript list with the run's copy of it (pointers only,
so no message object is touched) and the run's own list of dicts handed
out, itself compared with a private copy at the next request. That list
grows by the next step's messages after litellm is done with it: litellm
builds its request from a copy and its logging keeps a shallow copy of the
list it was given (``Logging.__init__``), so neither sees the later ones.

Memory is bounded: at most ``max_runs`` runs and ``max_messages`` messages
over all of them, least recently used dropped first. The dicts are shared
between requests: litellm reads them and copies what it changes (the
executor's tests check that a request after a completed one is unchanged).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ...messages._message import PROVIDER_CALL_IDS, Message, openai_message, to_openai
from ...messages._transcript import HeadedView, as_list

__all__ = ["ConvertedMessages"]

_CHUNK = 512
"""Messages compared per C-level slice comparison when a run of cached messages breaks."""


class _Run:
    """One run's converted messages: ``out[i]`` is ``src[i]`` converted."""

    __slots__ = ("handed", "ids", "out", "shadow", "src", "tail", "where")

    def __init__(self) -> None:
        # When src is a HeadedView's head + transcript: (the transcript list, how many
        # of it src holds, a copy of those), and the dicts handed out for it (``handed``,
        # which the receiver may change) beside a private copy (``shadow``).
        self.tail: tuple[list[Message], int, list[Message]] | None = None
        self.handed: list[dict[str, Any]] = []
        self.shadow: list[dict[str, Any]] = []
        self.src: list[Message] = []
        self.out: list[dict[str, Any]] = []
        self.where: dict[int, int] = {}  # id(message) -> index; src keeps the objects alive
        self.ids: dict[str, str] = {}  # provider ids after src (renamed calls)

    def truncate(self, size: int) -> None:
        """Keep only the first ``size`` messages."""
        where = self.where
        for message in self.src[size:]:
            where.pop(id(message), None)
        del self.src[size:]
        del self.out[size:]
        if self.ids:  # the ids of the kept prefix (rare: only with renamed calls)
            self.ids = {}
            for message in self.src:
                if message.tool_calls and message.metadata:
                    self.ids.update(message.metadata.get(PROVIDER_CALL_IDS) or {})

    def keep(
        self, messages: list[Message], items: list[dict[str, Any]], ids: dict[str, str]
    ) -> None:
        """Append ``messages`` (converted: ``items``); ``ids``: the provider ids after them."""
        where = self.where
        for i, message in enumerate(messages, len(self.src)):
            where[id(message)] = i
        self.src += messages
        self.out += items
        self.ids = ids


def _same_run(msgs: list[Message], i: int, src: list[Message], p: int) -> int:
    """How many messages from ``msgs[i]`` on are ``src[p]`` on (identical or equal)."""
    m = min(len(msgs) - i, len(src) - p)
    theirs = src if p == 0 and m == len(src) else src[p : p + m]  # no copy in the usual case
    if msgs[i : i + m] == theirs:  # the usual case: one C-level comparison
        return m
    lo = 0
    while True:  # the runs differ somewhere: find where, a chunk at a time
        hi = min(m, lo + _CHUNK)
        if msgs[i + lo : i + hi] != src[p + lo : p + hi]:
            for k in range(lo, hi):
                a, b = msgs[i + k], src[p + k]
                if a is not b and a != b:
                    return k
        lo = hi


class ConvertedMessages:
    """``to_openai`` of each request's messages, converting only what a run has not sent."""

    def __init__(self, *, max_runs: int = 256, max_messages: int = 200_000) -> None:
        self.max_runs = max_runs
        self.max_messages = max_messages
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._held = 0

    @property
    def held(self) -> int:
        """How many converted messages the cache holds."""
        return self._held

    def convert(self, run_id: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """The OpenAI dicts of ``messages``, the request of run ``run_id``.

        The list is the caller's to read (litellm copies what it changes); a
        change to it is noticed at the run's next request and not repeated.
        """
        if len(messages) > self.max_messages:
            return to_openai(messages)
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _Run()
        else:
            self._runs.move_to_end(run_id)
        before = len(run.src)
        if isinstance(messages, HeadedView):
            result = self._headed(run, messages)
        else:
            run.tail = None  # the fast path's state describes the previous request only
            result = self._general(run, as_list(messages))
        self._held += len(run.src) - before
        runs = self._runs
        while runs and (self._held > self.max_messages or len(runs) > self.max_runs):
            _, dropped = runs.popitem(last=False)
            self._held -= len(dropped.src)
        return result

    @staticmethod
    def _general(run: _Run, msgs: list[Message]) -> list[dict[str, Any]]:
        if run.ids:
            result = ConvertedMessages._prefix(run, msgs)
        else:
            result = ConvertedMessages._pieces(run, msgs)
        if result is None:  # renamed calls in a request that is not a plain append
            result = to_openai(msgs)
        return result

    @staticmethod
    def _headed(run: _Run, view: HeadedView) -> list[dict[str, Any]]:
        """The usual request (system prompt + transcript) after the same run's last one.

        The transcript part is checked with one C-level comparison of the whole
        transcript list (pointers only: no message is touched), and the list
        handed out is the run's own, checked against a private copy next time
        (whoever received it may have changed it); only new messages cost more.
        """
        head, items, stop = view.parts()
        tail, run.tail = run.tail, None
        size = len(head)
        if tail is not None and tail[0] is items and tail[1] <= stop == len(items):
            transcript, k = tail[2], tail[1]
            fits = len(run.src) == size + k
            fits = fits and all(a is b for a, b in zip(head, run.src[:size], strict=True))
            if fits:
                transcript += items[k:]
                if items == transcript:  # the history the run sent is still there, as it was
                    if run.handed != run.shadow:  # the receiver changed it: hand out a copy
                        run.handed = list(run.shadow)
                    if stop > k:
                        new = transcript[k:]
                        ids = dict(run.ids)
                        converted = [openai_message(m, ids) for m in new]
                        run.keep(new, converted, ids)
                        run.shadow += converted
                        run.handed += converted
                    run.tail = (items, stop, transcript)
                    return run.handed
                del transcript[k:]
        msgs = view.as_list()
        result = ConvertedMessages._general(run, msgs)
        if stop == len(items) and msgs == run.src:
            run.tail = (items, stop, items[:stop])
            run.shadow = list(run.out)
            run.handed = list(run.out)
            return run.handed
        return result

    @staticmethod
    def _prefix(run: _Run, msgs: list[Message]) -> list[dict[str, Any]] | None:
        """A run with renamed calls: reuse only a request that starts like ``src``."""
        src = run.src
        m = _same_run(msgs, 0, src, 0) if msgs and run.where.get(id(msgs[0])) == 0 else 0
        if m == len(msgs):
            return run.out[:m]
        tail = msgs[m:]
        where = run.where
        if any(id(message) in where for message in tail):
            return None  # reordered or partly reused: the ids would differ
        if m < len(src):
            run.truncate(m)  # a rolled-back tail (or another conversation), replaced
        ids = dict(run.ids)
        items = [openai_message(message, ids) for message in tail]
        run.keep(tail, items, ids)
        return run.out[: len(msgs)]

    @staticmethod
    def _pieces(run: _Run, msgs: list[Message]) -> list[dict[str, Any]] | None:
        """No renamed calls: conversions do not depend on what comes before them."""
        src, out, where = run.src, run.out, run.where
        n = len(msgs)
        result: list[dict[str, Any]] = []
        fresh: dict[str, str] = {}  # ids renamed by messages converted here
        tail = 0  # where the trailing messages that src does not hold start
        end = -1  # where in src the last reused piece ended
        i = 0
        while i < n:
            message = msgs[i]
            p = where.get(id(message))
            if p is not None and src[p] is message:
                if fresh:  # the reused dicts would need those ids
                    return None
                m = _same_run(msgs, i, src, p)
                result += out if p == 0 and m == len(out) else out[p : p + m]
                i += m
                tail, end = i, p + m
                continue
            result.append(openai_message(message, fresh))
            i += 1
        if tail < n:  # new messages at the end: the run's next steps start with them
            if end < 0:
                run.truncate(0)  # nothing reused: another conversation under this run id
            elif end < len(src):
                run.truncate(end)  # a rolled-back tail, replaced by what follows
            run.keep(msgs[tail:], result[len(result) - (n - tail) :], fresh)
        return result
