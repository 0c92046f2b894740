"""Token counts that outlive the process: a checkpoint in THREAD state (``COUNTS``).

A new process (or an index dropped from the per-process cache) would
otherwise count every message of the request span again before its first
inference. The hook writes a :class:`TokenCheckpoint` every few steps, or
with the other thread state it writes (a new summary); a new index takes
it after checking it against the thread it is read with (encoding, cut
limit, positions and ids), so a stale, foreign or corrupt checkpoint is
ignored and the span recounted. A bound index (``_bound``) checkpoints its
bounds the same way, under the encoding name ``bound:utf8``: an index only
takes a checkpoint of its own kind.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import ValidationError

from awaken_runtime import Command, Message, StateValueError, Store

from ._index import TokenSums
from ._state import COUNTS, StateReader, TokenCheckpoint

__all__ = ["CHECKPOINT_EVERY", "checkpoint", "fits", "read_checkpoint", "restore"]

log = logging.getLogger("awaken_ext_compact")

CHECKPOINT_EVERY = 32
"""Messages after which the checkpoint is refreshed even when nothing else is committed:
a new process counts at most this many messages beyond it."""


def read_checkpoint(
    store: Store, reader: StateReader[TokenCheckpoint | None] | None = None
) -> TokenCheckpoint | None:
    """The thread's checkpoint, or ``None`` (absent or not a checkpoint); ``reader``
    (of :data:`COUNTS`) validates each distinct value once."""
    try:
        return reader.read(store) if reader is not None else COUNTS.get(store)
    except (StateValueError, ValidationError) as exc:
        log.warning("compact: ignoring an unreadable token checkpoint: %s", exc)
        return None


def fits(found: TokenCheckpoint, name: str, cap: int | None, messages: Sequence[Message]) -> bool:
    """Whether ``found`` describes ``messages`` for an index ``name`` with cut limit ``cap``."""
    n = len(messages)
    if found.encoding != name or found.cap != cap:
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


def restore(index: TokenSums, found: TokenCheckpoint | None, messages: Sequence[Message]) -> bool:
    """Seed a new ``index`` with ``found`` if it describes ``messages``; whether it did."""
    if found is None or len(index) or index.anchor is not None:
        return False
    if not fits(found, index.name, index.big_limit, messages):
        return False
    span = (found.start, found.through, found.tokens)
    index.restore(messages, span, found.last_user, found.cuts)
    index.checked = found
    return True


def checkpoint(
    index: TokenSums,
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
    if found is not None and found is not index.checked:
        if fits(found, index.name, index.big_limit, messages):
            index.checked = found  # the same object (StateReader) is not checked again
        else:
            found = None  # stale or foreign: replace it now
    fresh = found is not None and found.start == start and n - 1 - found.through < CHECKPOINT_EVERY
    if fresh and not force:
        return None
    if found is not None and found.start == start and found.through == n - 1:
        return None
    record = TokenCheckpoint(
        encoding=index.name,
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
