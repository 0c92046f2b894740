"""The file store's thread lines: JSON objects whose messages a reader need not parse.

A thread line is one JSON object (a commit, or a compacted file's snapshot).
Its messages come last, framed so that a reader can take each message's JSON
text without parsing it::

    {"fv": 1, "c": ..., "v": ..., "b": [...], ..., "ids": [message ids],
     "calls": [tool-call ids], "m": [message, ...], "ml": [byte length of each message]}

A reader of a line that starts with ``{"fv":1,`` finds ``"ml"`` from the end
(the messages' own text, which the model and users write, comes before it),
cuts the messages' texts out by their lengths and parses only the rest
(:func:`parse_line`): the messages stay undecoded until a run reads them, and
``ids`` and ``calls`` index them for the store's commit checks. The line is
plain JSON all the same; a line this framing does not fit (written before it,
or edited by hand) is parsed whole, its messages as objects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...messages._message import Message

__all__ = ["frame", "parse_line"]

_START = b'{"fv":1,'
_MESSAGES = b',"m":['
_LENGTHS = b'],"ml":['


def frame(head: str, messages: Sequence[Message]) -> bytes:
    """The line of ``head`` (a non-empty JSON object's text, without ``m``) holding
    ``messages``.

    Message fields at their defaults are left out (as SQLite rows do).
    """
    texts = [m.model_dump_json(exclude_defaults=True).encode() for m in messages]
    ids = json.dumps([m.id for m in messages], ensure_ascii=False)
    calls = json.dumps(
        [c.id for m in messages if m.tool_calls for c in m.tool_calls], ensure_ascii=False
    )
    lengths = ",".join([str(len(t)) for t in texts])
    return b"".join(
        [
            f'{{"fv":1,{head[1:-1]},"ids":{ids},"calls":{calls}'.encode(),
            _MESSAGES,
            b",".join(texts),
            _LENGTHS,
            lengths.encode(),
            b"]}",
        ]
    )


def parse_line(line: bytes) -> Any:
    """A thread line's JSON value; a framed line's messages as their texts under ``"mj"``.

    Raises ``ValueError`` where ``json.loads`` would (the caller names the line).
    """
    head = _framed(line)
    return head if head is not None else json.loads(line)


def _framed(line: bytes) -> dict[str, Any] | None:
    if not line.startswith(_START):
        return None
    at = line.rfind(_LENGTHS)
    if at < 0 or not line.endswith(b"]}"):
        return None
    try:
        lengths = json.loads(line[at + len(_LENGTHS) - 1 : -1])
        start = at - sum(lengths) - max(len(lengths) - 1, 0)
        if start < len(_MESSAGES) or line[start - len(_MESSAGES) : start] != _MESSAGES:
            return None
        head = json.loads(line[: start - len(_MESSAGES)] + b"}")
    except (ValueError, TypeError):
        return None  # not this framing after all: the whole line is parsed
    if not (
        isinstance(head, dict)
        and isinstance(head.get("ids"), list)
        and isinstance(head.get("calls"), list)
    ):
        return None
    texts: list[bytes] = []
    pos = start
    for n in lengths:
        texts.append(line[pos : pos + n])
        pos += n + 1
    if len(texts) != len(head["ids"]):
        return None
    head["mj"] = texts
    return head
