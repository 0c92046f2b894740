"""What a dropped front-end stream means, and the AI SDK streams a client may resume.

``--on-disconnect`` is a per-server choice, because the AI SDK itself treats
abort and stream resumption as alternatives: under ``cancel`` (the default) a
stream that ends before its last chunk cancels its run at the next boundary,
so the thread keeps what was committed and no more; under ``continue`` the run
finishes in the background and ``GET .../chat/{chatId}/stream`` replays the
chat's stream. The replay starts at the stream's first chunk (what the AI SDK's
``DefaultChatTransport`` expects: ``resumeStreamIsReplay``, the client rebuilds
the message from it), so a client that reloaded and one that kept its partial
message both end with every chunk once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["ChatStream", "ChatStreams", "OnDisconnect"]

OnDisconnect = Literal["cancel", "continue"]
"""What a dropped AI SDK or AG-UI stream does to its run."""

KEEP_DROPPED_S = 3600.0
"""How long a dropped stream stays resumable (its events are in the store's log)."""


@dataclass
class ChatStream:
    """The last AI SDK stream of one chat: enough to replay it."""

    run_id: str
    message_id: str
    after: int
    """The run's seq before the stream's first event (a resume leg starts mid-run)."""
    denied: frozenset[str] = frozenset()
    complete: bool = False
    """Every chunk reached the connection: nothing to resume."""
    opened_at: float = field(default_factory=time.monotonic)


class ChatStreams:
    """Each chat's last stream, by the chat's key (its profile-namespaced id)."""

    def __init__(self) -> None:
        self._by_chat: dict[str, ChatStream] = {}

    def open(self, chat_key: str, stream: ChatStream) -> None:
        """A new stream of a chat replaces its previous one."""
        now = time.monotonic()
        for key, old in list(self._by_chat.items()):
            if now - old.opened_at > KEEP_DROPPED_S:
                del self._by_chat[key]
        self._by_chat[chat_key] = stream

    def resumable(self, chat_key: str) -> ChatStream | None:
        """The chat's stream if it was cut before its end, else ``None``."""
        stream = self._by_chat.get(chat_key)
        if stream is None or stream.complete:
            return None
        return stream

    def completed(self, chat_key: str, stream: ChatStream) -> None:
        """Every chunk of ``stream`` went out: the chat has nothing to resume."""
        stream.complete = True
        if self._by_chat.get(chat_key) is stream:
            del self._by_chat[chat_key]
