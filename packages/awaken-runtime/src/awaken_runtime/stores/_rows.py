"""Decoding stored rows (JSON text, or JSON values already parsed): a bad row is
``StoreCorrupt``, never a raw error.

Rows are trusted on the fast path (one validation call for a whole list);
only when that fails is each row decoded on its own, to name the bad one.
``decode_message_rows`` and ``decode_stored_row`` (public in
``awaken_runtime.stores``) are the message rows' and one other row's case, for a
third-party backend's loader and ``StoredMessages`` decoder.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter

from ..messages._message import Message
from ..messages._stored import StoredMessages
from ._errors import StoreCorrupt

__all__ = [
    "MESSAGES",
    "decode_message_rows",
    "decode_one",
    "decode_rows",
    "decode_stored_row",
    "lazy_message_rows",
    "no_gc",
]

MESSAGES = TypeAdapter(list[Message])
"""One adapter for every store's message rows (building one costs milliseconds)."""

M = TypeVar("M", bound=BaseModel)

_DECODE_ERRORS = (ValueError, TypeError, KeyError)
"""What decoding a damaged row raises (pydantic's ValidationError is a ValueError)."""


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def decode_one(path: str, what: str, model: type[M], body: Any, *, parsed: bool = False) -> M:
    """``body`` (JSON text, or a parsed JSON value) as ``model``; ``StoreCorrupt`` naming
    ``what`` if it is not one."""
    try:
        return model.model_validate(body) if parsed else model.model_validate_json(body)
    except _DECODE_ERRORS as exc:
        raise StoreCorrupt(path, f"{what} is not a valid {model.__name__} ({_why(exc)})") from None


def decode_rows(
    path: str,
    what: str,
    adapter: TypeAdapter[list[M]],
    model: type[M],
    bodies: Sequence[Any],
    first: int = 1,
    *,
    parsed: bool = False,
) -> list[M]:
    """Every body as ``model`` (``what`` names the rows, e.g. "thread 't1' message").

    Bodies are JSON text (``str`` or ``bytes``; all of one kind is fastest), or
    (``parsed``) JSON values already parsed. ``first`` is the number of the first
    row, for the error message.
    """
    if not bodies:
        return []
    try:
        if parsed:
            return adapter.validate_python(bodies)
        if isinstance(bodies[0], bytes):
            items = adapter.validate_json(b"[" + b",".join(bodies) + b"]")
        else:
            items = adapter.validate_json("[" + ",".join(bodies) + "]")
    except _DECODE_ERRORS:
        pass
    else:
        if len(items) == len(bodies):  # a row holding two objects would add one
            return items
    # One by one: names the damaged row, or decodes rows that only could not be joined
    # (TEXT and BLOB bodies mixed, as a row written by another tool can be).
    return [
        decode_one(path, f"{what} row {i}", model, body, parsed=parsed)
        for i, body in enumerate(bodies, first)
    ]


def decode_message_rows(
    where: str, what: str, bodies: Sequence[str | bytes], first: int = 1
) -> list[Message]:
    """Stored message rows (JSON text, ``str`` or ``bytes``) as messages.

    A row that is not a message raises :class:`StoreCorrupt` for ``where`` (the
    store's file or database) naming ``what`` and the row's number, counting
    from ``first``: ``decode_message_rows("db", "thread 't1' message", rows, 5)``
    names a bad third row "thread 't1' message row 7", never a raw pydantic or
    JSON error. All the rows are validated in one call unless one is bad. To
    hand rows out undecoded, see :func:`lazy_message_rows`.
    """
    # Decoding allocates many objects and no cycles: collections would find nothing.
    with no_gc():
        return decode_rows(where, what, MESSAGES, Message, bodies, first)


def lazy_message_rows(where: str, what: str, bodies: list[str] | list[bytes]) -> StoredMessages:
    """A thread's message rows (JSON text) handed out undecoded: each becomes a message
    when first read, through :func:`decode_message_rows` (a damaged row is
    ``StoreCorrupt`` naming ``what`` and its number, from 1). ``bodies`` becomes the
    sequence's own."""
    return StoredMessages.lazy(bodies, partial(_decode_stretch, where, what))


def _decode_stretch(where: str, what: str, bodies: list[Any], start: int) -> list[Message]:
    # StoredMessages counts rows from 0; StoreCorrupt names them from 1.
    return decode_message_rows(where, what, bodies, start + 1)


def decode_stored_row(where: str, what: str, model: type[M], body: str | bytes) -> M:
    """One stored row (JSON text) as ``model``, e.g. a run record, a batch or an event.

    A row that is not one raises :class:`StoreCorrupt` for ``where`` (the store's
    file or database) naming ``what``, never a raw pydantic or JSON error:
    ``decode_stored_row("db", "run 'r1' record", RunRecord, body)`` says
    "run 'r1' record is not a valid RunRecord (...)". ``what`` should name the
    thing and its row (thread, run or agent, and the row's key), so the message
    says which row to repair. Message rows go through :func:`decode_message_rows`.
    """
    return decode_one(where, what, model, body)


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding many rows.

    Decoding allocates many small objects and no cycles, so every collection
    it triggers (some of them full ones, over every object of the process)
    finds nothing to free: on a busy process that was half of a load's CPU.
    Collection resumes, with the same thresholds, when the block ends.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
