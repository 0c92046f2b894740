"""Assembling one inference request from the transcript window and context entries.

Nothing here copies the transcript: the request's messages are a chain of
read-only segments (system prompt, session band, window before the newest
user turn, conversation band, the rest of the window, suffix band), so the
cost of a request does not grow with the thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, overload

from pydantic import ValidationError

from ..messages._message import Message
from ..messages._transcript import ChainView, MessageView
from ..plugins._context import (
    BAND_ORDER,
    CONTEXT_MESSAGES,
    INFERENCE_PARAMS,
    REQUEST_WINDOW,
    TOOL_FILTER,
    Band,
    ContextMessage,
    request_context,
)
from ..state._engine import Command, MergePolicy, Scope, StagedCommand

__all__ = ["CONTEXT_COOLDOWNS", "ReplacedContent", "RequestAssembler", "request_only_clears"]

log = logging.getLogger("awaken_runtime")

_BANDS = tuple(Band)

CONTEXT_COOLDOWNS = "awaken.context_cooldowns"
"""Run-scope COMMUTATIVE key: ``{entry key: step it was last injected}``.

Run state rather than an attribute of one leg, so a resumed leg keeps the
cooldowns the parked one started."""


class ReplacedContent(Sequence[Message]):
    """``messages`` with the content of some tool results replaced (copy-free).

    Only ``role == "tool"`` messages are replaced; other ids are ignored, so a
    plugin can shorten a tool result for one request but never rewrite what the
    user or the model said.
    """

    __slots__ = ("_inner", "_replace", "_swapped")

    def __init__(self, inner: Sequence[Message], replace: dict[str, str]) -> None:
        self._inner = inner
        self._replace = replace
        self._swapped: dict[str, Message] = {}

    def _swap(self, message: Message) -> Message:
        text = self._replace.get(message.id)
        if text is None or message.role != "tool" or not isinstance(text, str):
            return message
        found = self._swapped.get(message.id)
        if found is None:
            found = self._swapped[message.id] = message.model_copy(update={"content": text})
        return found

    def __len__(self) -> int:
        return len(self._inner)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            return [self._swap(m) for m in self._inner[index]]
        return self._swap(self._inner[index])

    def __iter__(self) -> Iterator[Message]:
        for message in self._inner:
            yield self._swap(message)


class RequestAssembler:
    """Builds request message sequences for one run, applying context cooldowns.

    Cooldowns are read from run state (``CONTEXT_COOLDOWNS``); the steps at
    which entries were injected since the last commit wait in ``marks`` for
    the loop to stage them (``take_marks``).
    """

    __slots__ = (
        "_base_system",
        "_built",
        "_instructions",
        "_parsed",
        "_standing",
        "_system",
        "marks",
    )

    def __init__(self, instructions: str) -> None:
        self._instructions = instructions
        self._base_system = [Message.system(instructions)] if instructions else []
        self.marks: dict[str, int] = {}
        # Plugins re-stage the same entries step after step, and committed values are
        # replaced, never mutated: an entry is parsed once per stored object, and the
        # system message is rebuilt only when its text changes.
        self._parsed: dict[str, tuple[object, ContextMessage]] = {}
        self._system: Message | None = None
        self._standing: tuple[object, dict[str, Any] | None] = (None, None)
        # The segments of the last entries: plugins stage the same entries step after
        # step, and a request's messages are read-only (never mutated by the executor).
        self._built: (
            tuple[tuple[ContextMessage, ...], list[Message], list[Message], list[Message]] | None
        ) = None

    def with_standing(
        self, standing: dict[str, Any], raw: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The standing entries (withdrawn ones left out) under this request's own.

        A request-only entry of the same key wins for its request. Committed
        values are replaced, never mutated: the same standing table with no
        request-only entries gives the same (cached) dict.
        """
        if raw is None and standing is self._standing[0]:
            return self._standing[1]
        merged = request_context(standing, raw)
        if raw is None:
            self._standing = (standing, merged)
        return merged

    def take_marks(self) -> dict[str, int]:
        """The injection steps not yet staged (and forget them)."""
        marks, self.marks = self.marks, {}
        return marks

    def entries(
        self, raw: dict[str, Any] | None, step: int, injected: dict[str, Any] | None = None
    ) -> list[ContextMessage]:
        """Context entries due at ``step``, sorted by (band, priority, key).

        ``injected``: the committed ``CONTEXT_COOLDOWNS`` table.
        """
        if not raw:
            return []
        due: list[ContextMessage] = []
        parsed = self._parsed
        for key, data in raw.items():
            hit = parsed.get(key)
            if hit is not None and hit[0] is data:
                entry = hit[1]
            else:
                try:
                    entry = ContextMessage.model_validate(data)
                except ValidationError as exc:
                    log.warning("dropping malformed context message %r: %s", key, exc)
                    continue
                parsed[key] = (data, entry)
            if entry.cooldown_steps:
                last = self.marks.get(entry.key)
                if last is None and injected:
                    last = injected.get(entry.key)
                if isinstance(last, int) and step - last <= entry.cooldown_steps:
                    continue
                self.marks[entry.key] = step
            due.append(entry)
        due.sort(key=lambda e: (BAND_ORDER[e.band], e.priority, e.key))
        return due

    @property
    def head(self) -> list[Message]:
        """The system prompt as a message list (empty without instructions)."""
        return self._base_system

    def messages(
        self, window: MessageView, last_user: int, entries: list[ContextMessage]
    ) -> Sequence[Message]:
        """The request's messages for ``window`` plus ``entries``.

        ``last_user`` is the transcript index of the newest user message.
        """
        if not entries:
            if not self._base_system:
                return window
            return ChainView([self._base_system, window])
        built = self._built
        if (
            built is not None
            and len(built[0]) == len(entries)
            and all(a is b for a, b in zip(built[0], entries, strict=True))
        ):
            head, conversation, suffix = built[1], built[2], built[3]
        else:
            head, conversation, suffix = self._segments(entries)
            self._built = (tuple(entries), head, conversation, suffix)
        split = last_user - window.start
        if conversation and 0 <= split <= len(window):
            before, after = window[:split], window[split:]
        else:
            before, after = window, []
        return ChainView([head, before, conversation, after, suffix])

    def _segments(
        self, entries: list[ContextMessage]
    ) -> tuple[list[Message], list[Message], list[Message]]:
        """The head (system prompt and session band), conversation and suffix messages."""
        bands: dict[Band, list[ContextMessage]] = {b: [] for b in _BANDS}
        for entry in entries:
            bands[entry.band].append(entry)
        system_parts = [self._instructions] if self._instructions else []
        system_parts.extend(e.content for e in bands[Band.SYSTEM])
        head = [self._system_message("\n\n".join(system_parts))] if system_parts else []
        head.extend(_as_message(e) for e in bands[Band.SESSION])
        conversation = [_as_message(e) for e in bands[Band.CONVERSATION]]
        suffix = [_as_message(e) for e in bands[Band.SUFFIX]]
        return head, conversation, suffix

    def _system_message(self, text: str) -> Message:
        system = self._system
        if system is None or system.content != text:
            system = self._system = Message.system(text)
        return system


def _as_message(entry: ContextMessage) -> Message:
    return Message(
        role=entry.role,
        content=entry.content,
        metadata={"context_key": entry.key, "band": entry.band.value},
    )


_CLEARED = (CONTEXT_MESSAGES, TOOL_FILTER, INFERENCE_PARAMS, REQUEST_WINDOW)
_removes: dict[str, dict[str, StagedCommand]] = {}


def _clears(owner: str) -> dict[str, StagedCommand]:
    # Commands are frozen: one set of removes per owner serves every step.
    found = _removes.get(owner)
    if found is None:
        run, comm = Scope.RUN, MergePolicy.COMMUTATIVE
        found = _removes[owner] = {
            key: StagedCommand(
                owner,
                Command.remove(key, scope=run)
                if key == REQUEST_WINDOW
                else Command.remove(key, scope=run, merge=comm),
            )
            for key in _CLEARED
        }
    return found


def request_only_clears(data: Any, marks: dict[str, Any] | None, owner: str) -> list[StagedCommand]:
    """Commands (by ``owner``) removing the request-only entries (context, filters,
    params, window) from run state, plus the context cooldown ``marks``."""
    run = Scope.RUN
    removes = _clears(owner)
    clear = [removes[key] for key in _CLEARED if (run, key) in data]
    if marks:
        # Committed with the step, so a resumed leg keeps the cooldowns.
        mark = Command.set(CONTEXT_COOLDOWNS, marks, scope=run, merge=MergePolicy.COMMUTATIVE)
        clear.append(StagedCommand(owner, mark))
    return clear
