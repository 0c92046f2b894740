"""Which profile owns which thread and run, kept in the store (SHARED scope).

The store's threads do not record a profile, so the server keeps its own
records under namespaces no agent reads. They are cached in memory (an owner
never changes once written); a miss re-reads them, so processes sharing a store
see each other's threads.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from awaken_runtime import Command, Scope
from awaken_runtime.stores import ProfileStore

from ._problems import Problem

__all__ = ["Owners", "not_found"]

THREADS = "awaken-server.threads"
RUNS = "awaken-server.runs"
AGENTS = "awaken-server.published-agents"
CHATS = "awaken-server.chats"
REFRESH_S = 1.0
"""At most one re-read of the records per second on a cache miss."""


def not_found(kind: str, item_id: str) -> Problem:
    """The one answer for "absent" and "someone else's": ids do not leak."""
    return Problem(
        404,
        "not-found",
        f"{kind} {item_id!r} does not exist",
        field=f"path:{kind}_id",
        fix=f"use a {kind} id this key created (GET /v1/threads lists them)",
    )


class Owners:
    """Thread and run records per profile, persisted through the store's ProfileStore."""

    def __init__(self, store: ProfileStore) -> None:
        self._store = store
        self._threads: dict[str, dict[str, Any]] = {}
        self._runs: dict[str, dict[str, Any]] = {}
        self._published: set[str] = set()
        self._chats: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()
        self._refreshed: dict[str, float] = {}

    async def load(self) -> None:
        """Read every record (at start)."""
        self._threads = dict(await self._store.read_scope(Scope.SHARED, THREADS))
        self._runs = dict(await self._store.read_scope(Scope.SHARED, RUNS))
        self._published = set(await self._store.read_scope(Scope.SHARED, AGENTS))
        self._chats = dict(await self._store.read_scope(Scope.SHARED, CHATS))

    async def add_thread(
        self, thread_id: str, profile_id: str, agent_id: str | None, *, chat_key: str | None = None
    ) -> None:
        """Record a new thread of ``profile_id`` (``chat_key``: the chat it is a revision of)."""
        record: dict[str, Any] = {
            "profile_id": profile_id,
            "agent_id": agent_id,
            "created_at": datetime.now(UTC).isoformat(),
        }
        if chat_key is not None:
            record["chat_key"] = chat_key
        async with self._lock:
            await self._store.write_scope(
                Scope.SHARED, THREADS, [Command.set(thread_id, record, scope=Scope.SHARED)]
            )
            self._threads[thread_id] = record

    async def add_run(self, run_id: str, record: dict[str, Any]) -> None:
        """Record a run (its thread, profile, agent and config version)."""
        async with self._lock:
            await self._store.write_scope(
                Scope.SHARED, RUNS, [Command.set(run_id, record, scope=Scope.SHARED)]
            )
            self._runs[run_id] = record

    async def chat(self, chat_key: str) -> dict[str, Any]:
        """A chat's revisions: ``{"thread_id": current, "revisions": [older thread ids]}``
        (a chat that never forked is its own thread, with no older revisions)."""
        record = await self._lookup(self._chats, CHATS, chat_key)
        return dict(record) if record else {"thread_id": chat_key, "revisions": []}

    async def move_chat(self, chat_key: str, thread_id: str) -> None:
        """Make ``thread_id`` the chat's current thread; the old one joins its revisions."""
        current = await self.chat(chat_key)
        record = {
            "thread_id": thread_id,
            "revisions": [*current["revisions"], current["thread_id"]],
        }
        async with self._lock:
            await self._store.write_scope(
                Scope.SHARED, CHATS, [Command.set(chat_key, record, scope=Scope.SHARED)]
            )
            self._chats[chat_key] = record

    async def add_published(self, agent_id: str) -> None:
        """Remember that ``agent_id`` has published configs (the registry cannot list them)."""
        if agent_id in self._published:
            return
        async with self._lock:
            await self._store.write_scope(
                Scope.SHARED, AGENTS, [Command.set(agent_id, True, scope=Scope.SHARED)]
            )
            self._published.add(agent_id)

    @property
    def published(self) -> set[str]:
        """Agent ids with published configs."""
        return set(self._published)

    async def _lookup(self, table: dict[str, dict[str, Any]], owner: str, item_id: str) -> Any:
        record = table.get(item_id)
        if record is None and time.monotonic() - self._refreshed.get(owner, 0.0) > REFRESH_S:
            # Another server process on the same store may have written it; re-read the
            # records at most once a second, so unknown ids cannot make every request read.
            self._refreshed[owner] = time.monotonic()
            table.update(await self._store.read_scope(Scope.SHARED, owner))
            record = table.get(item_id)
        return record

    async def refresh(self) -> None:
        """Re-read the thread and run records (throttled like a miss), before a listing."""
        for table, owner in ((self._threads, THREADS), (self._runs, RUNS)):
            if time.monotonic() - self._refreshed.get(owner, 0.0) > REFRESH_S:
                self._refreshed[owner] = time.monotonic()
                table.update(await self._store.read_scope(Scope.SHARED, owner))

    async def thread(self, thread_id: str, profile_id: str) -> dict[str, Any]:
        """The record of a thread of ``profile_id``; 404 when absent or another's."""
        record = await self._lookup(self._threads, THREADS, thread_id)
        if record is None or record["profile_id"] != profile_id:
            raise not_found("thread", thread_id)
        return dict(record)

    async def has_thread(self, thread_id: str) -> bool:
        """Whether any profile owns ``thread_id``."""
        return await self._lookup(self._threads, THREADS, thread_id) is not None

    async def run(self, run_id: str, profile_id: str) -> dict[str, Any]:
        """The record of a run of ``profile_id``; 404 when absent or another's."""
        record = await self._lookup(self._runs, RUNS, run_id)
        if record is None or record["profile_id"] != profile_id:
            raise not_found("run", run_id)
        return dict(record)

    def threads_of(self, profile_id: str) -> list[tuple[str, dict[str, Any]]]:
        """A profile's threads, sorted by id."""
        return sorted((t, r) for t, r in self._threads.items() if r["profile_id"] == profile_id)

    def runs_of_thread(self, thread_id: str) -> list[tuple[str, dict[str, Any]]]:
        """A thread's runs, oldest first."""
        runs = [(r, rec) for r, rec in self._runs.items() if rec["thread_id"] == thread_id]
        return sorted(runs, key=lambda item: item[1]["started_at"])
