"""Threads and runs created over MCP, owned by the caller's profile as REST's are.

The records are ``awaken serve``'s own (``awaken_server``'s ``Owners``, kept in
the store), so the REST API on the same store and keys sees an MCP client's
agent threads as that key's: ``GET /v1/runs/{run_id}`` lists a parked run's
tickets and ``POST /v1/runs/{run_id}/resume`` answers them. An agent call may
continue only a thread of its own profile (MCP's or REST's); another profile's
is refused in the same words as one that does not exist.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from awaken_runtime.stores import ProfileStore, ThreadStore

__all__ = ["McpOwners"]


class McpOwners:
    """The REST server's thread and run records, loaded on first use."""

    def __init__(self, store: ThreadStore) -> None:
        from awaken_server._owners import Owners  # the REST server's records, not a copy

        if not isinstance(store, ProfileStore):
            raise TypeError(
                f"MCP agent calls record who owns each thread in the store's profile state; "
                f"{type(store).__name__} has no ProfileStore port: use a store that does "
                f"(memory://, sqlite://, file://, postgresql://)"
            )
        self._owners = Owners(store)
        self._loaded = False
        self._lock = asyncio.Lock()

    async def _ready(self) -> Any:
        if not self._loaded:
            async with self._lock:
                if not self._loaded:
                    await self._owners.load()
                    self._loaded = True
        return self._owners

    async def add_thread(self, thread_id: str, profile: str, agent_id: str) -> None:
        """Record a new thread of ``profile``."""
        owners = await self._ready()
        await owners.add_thread(thread_id, profile, agent_id)

    async def owns_thread(self, thread_id: str, profile: str) -> bool:
        """Whether ``thread_id`` is a thread of ``profile`` (``False`` for another
        profile's and for one no MCP or REST caller created)."""
        from awaken_server import Problem

        owners = await self._ready()
        try:
            await owners.thread(thread_id, profile)  # a 404 Problem: absent or another's
        except Problem:
            return False
        return True

    async def add_run(self, run_id: str, thread_id: str, profile: str, agent_id: str) -> None:
        """Record a run of ``profile`` on its thread (what REST's resume route checks)."""
        owners = await self._ready()
        record = {
            "thread_id": thread_id,
            "profile_id": profile,
            "agent_id": agent_id,
            "config_version": None,
            "started_at": datetime.now(UTC).isoformat(),
        }
        await owners.add_run(run_id, record)
