"""``Caches``: what one plugin object keeps for every agent and thread it serves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from awaken_runtime import Command, ContextMessage, MessageView, Remove, Set

from ._bound import BOUND_NAME, BoundTokens
from ._config import CompactConfig
from ._counter import TokenCounter
from ._encodings import counting_encoding, encoding_for_model
from ._estimate import EstimatedEncoding
from ._index import ThreadIndexes, ThreadTokens, TokenSums
from ._persist import fits, restore
from ._state import TokenCheckpoint

if TYPE_CHECKING:
    from tiktoken import Encoding

__all__ = ["Caches"]

_STAGED = (ContextMessage, Command, Set, Remove)
"""The runtime's models the hook builds values of (the runtime defers building their
validators to their first use)."""

_PRIMER = (
    "Hello, World! It's 2025-01-02: x_y = f(42) + 3.14; naïve données über 数据 日本語 "
    "[]{}()\n\n  \tok?"
)
"""Text that takes the tokenizer's main paths (letters, digits, punctuation, spaces,
newlines, non-ASCII) once."""


def _ready_encoding(name: str, config: CompactConfig) -> Encoding | EstimatedEncoding:
    """Load encoding ``name`` and pay the hook's other once-per-process costs with it.

    Runs on a worker thread. Without it the first step of a new process pays them on
    the event loop: the validators of the runtime models it stages (about a millisecond
    to build) and the tokenizer's first encode (its regex caches fill lazily; part of
    that fill is per thread, so the loop thread still pays a little).
    """
    encoding = counting_encoding(
        name, cache_dir=config.tiktoken_cache_dir, allow_download=config.allow_download
    )
    encoding.encode_ordinary(_PRIMER)
    for model in _STAGED:
        if not model.__pydantic_complete__:
            model.model_rebuild()
    return encoding


@dataclass
class Caches:
    """Counters per encoding, token indexes per thread and the compactor back-off
    of this process, shared by every agent of one plugin object."""

    counters: dict[str, TokenCounter] = field(default_factory=dict)
    indexes: ThreadIndexes = field(default_factory=ThreadIndexes)
    clock: Callable[[], float] = time.time
    """Wall-clock seconds (back-off times are stored in thread state as Unix time)."""
    dead_until: dict[str, float] = field(default_factory=dict)
    """Per compactor (agent id, or the model for the built-in one): no call before this
    time, whatever the thread (a compactor that is down is down for every thread)."""
    by_model: dict[tuple[str | None, str], str] = field(default_factory=dict)
    """``(config.encoding, model)`` -> its encoding's name (no per-step name lookup)."""

    def loaded(self, config: CompactConfig, model: str) -> TokenCounter | None:
        """The counter :meth:`counter` returns, if it is already loaded."""
        name = self.by_model.get((config.encoding, model))
        return self.counters.get(name) if name is not None else None

    async def counter(self, config: CompactConfig, model: str) -> TokenCounter:
        """The counter for ``config.encoding`` or the model's encoding.

        The first use of an encoding loads it (tiktoken is imported then) on a
        worker thread, so the event loop is not blocked while its file is
        parsed; the hook's other first-use costs are paid there too
        (:func:`_ready_encoding`). Without the encoding the counter estimates
        (warned once).
        """
        name = config.encoding or encoding_for_model(model)
        found = self.counters.get(name)
        if found is None:
            encoding = await asyncio.to_thread(_ready_encoding, name, config)
            found = self.counters.setdefault(name, TokenCounter(encoding))
        self.by_model[(config.encoding, model)] = name
        return found

    def index(
        self,
        thread_id: str,
        counter: TokenCounter,
        cap: int | None,
        found: TokenCheckpoint | None,
        messages: MessageView,
        need: int,
    ) -> TokenSums:
        """The thread's token index if it has one (in this process, or a checkpoint of
        one), else its bound index: the thread is tokenized only once bounds say the
        count matters. Either is synced to ``messages`` from ``need`` on."""
        indexes = self.indexes
        index = indexes.find(thread_id, counter.name, cap)
        if index is None:
            name = counter.name  # a checkpoint of another kind is not even checked
            if found is not None and found.encoding == name and fits(found, name, cap, messages):
                return self.counted(thread_id, counter, cap, found, messages, need)
            index = indexes.find(thread_id, BOUND_NAME, cap)
            if index is None:
                index = BoundTokens(cap)
                indexes.put(thread_id, index)
        restore(index, found, messages)  # a new index: the counts a previous process left
        index.sync(messages, need)
        return index

    def counted(
        self,
        thread_id: str,
        counter: TokenCounter,
        cap: int | None,
        found: TokenCheckpoint | None,
        messages: MessageView,
        need: int,
    ) -> ThreadTokens:
        """The thread's token index, synced (from now on the thread is counted here)."""
        self.indexes.drop(thread_id, BOUND_NAME, cap)
        index = self.indexes.get(thread_id, counter, cap)
        restore(index, found, messages)
        index.sync(messages, need)
        return index
