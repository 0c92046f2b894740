"""The plugin's state: the summary (THREAD scope) and per-run stats (RUN scope)."""

from __future__ import annotations

import copy
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from awaken_runtime import Scope, StateKey, Store

__all__ = [
    "BACKOFF",
    "COUNTS",
    "STATS",
    "SUMMARY",
    "CompactBackoff",
    "CompactStats",
    "StateReader",
    "Summary",
    "TokenCheckpoint",
    "next_backoff",
]

T = TypeVar("T")
_ABSENT: Any = object()


class Summary(BaseModel):
    """The cumulative summary of a thread's transcript up to one message."""

    model_config = ConfigDict(frozen=True)
    text: str
    covered_through: str
    """Id of the last message the summary covers."""
    covered_count: int = Field(ge=1)
    """How many transcript messages it covers (position hint for ``covered_through``)."""
    compactions: int = Field(default=1, ge=1)
    """How many compactions were folded into it."""
    tokens: int = 0
    """Tokens of ``text`` in the encoding that counted it."""


class CompactStats(BaseModel):
    """What compaction did in one run (written only when something changes)."""

    model_config = ConfigDict(frozen=True)
    compactions: int = 0
    """Successful compactions (each may take several compactor calls)."""
    compactor_calls: int = 0
    summarized_messages: int = 0
    skipped_min_gain: int = 0
    """Triggers skipped because the span was under ``min_gain_tokens``."""
    failures: int = 0
    last_failure: str | None = None
    emergency_drops: int = 0
    """Requests that still exceeded the window and dropped their oldest safe prefix."""
    truncated_tool_results: int = 0
    last_request_tokens: int = 0
    """Planned request tokens when these stats were last written."""


class CompactBackoff(BaseModel):
    """Consecutive compactor failures of a thread and when to try again."""

    model_config = ConfigDict(frozen=True)
    failures: int = Field(ge=1)
    """Consecutive failed compactions (reset by a success)."""
    next_attempt_at: float
    """Unix time before which the compactor is not called again."""
    last_failure: str = ""


class TokenCheckpoint(BaseModel):
    """The token count of a thread's request span, so a new process does not recount it.

    ``tokens`` counts messages ``start`` through ``through`` (by position, the
    ids say which messages they were) as the request carries them, in the
    encoding ``encoding`` with tool results cut at ``cap`` tokens; ``cuts``
    lists the results that were cut: ``[position, characters kept (-1: the
    cut is not a prefix of the text), full tokens]``. With ``encoding``
    ``bound:utf8`` the numbers are byte bounds of the tokens instead, and
    ``cuts`` the tool results whose bound exceeds ``cap``. A checkpoint that
    does not match the thread it is read with is ignored (and the span recounted).
    """

    model_config = ConfigDict(frozen=True)
    encoding: str
    cap: int | None = None
    start: int = Field(ge=0)
    start_id: str
    through: int = Field(ge=0)
    through_id: str
    tokens: int = Field(ge=0)
    last_user: int = Field(default=-1, ge=-1)
    cuts: list[tuple[int, int, int]] = Field(default_factory=list)


def next_backoff(failures: int, reason: str, now: float, base: float, cap: float) -> CompactBackoff:
    """The back-off after one more failure (``failures`` so far): the wait starts at
    ``base`` seconds and doubles with each consecutive failure, up to ``cap``."""
    count = failures + 1
    delay = min(cap, base * 2.0 ** min(count - 1, 60))
    return CompactBackoff(failures=count, next_attempt_at=now + delay, last_failure=reason)


class StateReader(Generic[T]):
    """Reads one of this plugin's keys, validating each distinct value once.

    ``StateKey.get`` validates the stored value on every read and copies the
    default when the key is absent; the hook reads its keys every step. Here an
    absent key reads as the default itself (every value of these keys is
    frozen), and a value equal to the previous one read (compared with a private
    copy of its data, so an equal value in another dict, or one changed in
    place, compares by content) as the same validated object. Invalid values
    raise as ``StateKey.get`` does, and are never remembered.
    """

    __slots__ = ("_data", "_key", "_value")

    def __init__(self, key: StateKey[T]) -> None:
        self._key = key
        self._data: Any = _ABSENT
        self._value: T = key.default

    def read(self, store: Store) -> T:
        """The key's value in ``store`` (see the class doc)."""
        key = self._key
        raw = store.get_value(key.key, key.scope, _ABSENT)
        if raw is _ABSENT:
            return key.default
        if self._data is not _ABSENT and raw == self._data:
            return self._value
        value = key.get(store)
        self._data, self._value = copy.deepcopy(raw), value
        return value


SUMMARY: StateKey[Summary | None] = StateKey(
    "compact.summary", Summary | None, default=None, scope=Scope.THREAD
)
"""THREAD-scope: the summary, reused by later steps, runs and processes."""

STATS: StateKey[CompactStats] = StateKey(
    "compact.stats", CompactStats, default=CompactStats(), scope=Scope.RUN
)
"""RUN-scope: counters and the last failure."""

BACKOFF: StateKey[CompactBackoff | None] = StateKey(
    "compact.backoff", CompactBackoff | None, default=None, scope=Scope.THREAD
)
"""THREAD-scope: the failing compactor's back-off, kept across runs and processes."""

COUNTS: StateKey[TokenCheckpoint | None] = StateKey(
    "compact.counts", TokenCheckpoint | None, default=None, scope=Scope.THREAD
)
"""THREAD-scope: the token count of the request span, refreshed every few steps."""
