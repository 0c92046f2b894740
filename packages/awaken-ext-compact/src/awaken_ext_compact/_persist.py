"""Token counts that outlive the process: a checkpoint in THREAD state (``COUNTS``).

A new process (or an index dropped from the per-process cache) would
otherwise count every message of the request span again before its first
inference. The hook writes a :class:`TokenCheckpoint` every few steps, or
with the other thread state it writes (a new summary); a new index takes
it after checking it against the thread it is read with (encoding, cut
limit, positions and ids), so a stale, foreign or corrupt checkpoint is
ignored and the span recounted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import ValidationError

from awaken_runtime import Command, Message, StateValueError, Store

from ._index import ThreadTokens
from ._state import COUNTS, TokenCheckpoint

__all__ = ["CHECKPOINT_EVERY", "checkpoint", "read_checkpoint", "restore"]

log = logging.getLogger("awaken_ext_compact")

CHECKPOINT_EVERY = 32
"""Messages after which the checkpoint is refreshed even when nothing else is committed:
a new process counts at most this many messages beyond it."""


def read_checkpoint(store: Store) -> TokenCheckpoint | None:
    """The thread's checkpoint, or ``None`` (absent or not a checkpoint)."""
    try:
        return COUNTS.get(store)
    except (StateValueError, ValidationError) as exc:
        log.warning("compact: ignoring an unreadable token checkpoint: %s", exc)
        return None


def _fits(found: TokenCheckpoint, index: ThreadTokens, messages: Sequence[Message]) -> bool:
    n = len(messages)
    if found.encoding != index.counter.name or found.cap != index.big_limit:
        return False
    if not found.start <= found.through < n:
        return False
    if messages[found.start].id != found.start_id or messages[found.through].id != found.through_id:
        return False
    user = found.last_user
    if user > found.through or (user >= 0 and messages[user].role != "user"):
        return False
    return all(
        found.start <= p <= found.through and messages[p].role == "tool" for p, _, _ in found.cuts
    )


def restore(
    index: ThreadTokens, found: TokenCheckpoint | None, messages: Sequence[Message]
) -> bool:
    """Seed a new ``index`` with ``found`` if it describes ``messages``; whether it did."""
    if found is None or len(index) or index.anchor is not None or not _fits(found, index, messages):
        return False
    span = (found.start, found.through, found.tokens)
    index.restore(messages, span, found.last_user, found.cuts)
    return True


def checkpoint(
    index: ThreadTokens,
    start: int,
    messages: Sequence[Message],
    found: TokenCheckpoint | None,
    *,
    force: bool,
) -> Command | None:
    """The command refreshing the checkpoint of span ``[start, n)``, when it is due."""
    n = len(messages)
    if start >= n:
        return None
    if found is not None and not _fits(found, index, messages):
        found = None  # stale or foreign: replace it now
    fresh = found is not None and found.start == start and n - 1 - found.through < CHECKPOINT_EVERY
    if fresh and not force:
        return None
    if found is not None and found.start == start and found.through == n - 1:
        return None
    record = TokenCheckpoint(
        encoding=index.counter.name,
        cap=index.big_limit,
        start=start,
        start_id=messages[start].id,
        through=n - 1,
        through_id=messages[n - 1].id,
        tokens=index.tokens(start, n),
        last_user=index.last_user,
        cuts=index.cuts(start, n),
    )
    return COUNTS.set(record)
