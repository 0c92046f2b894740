"""pgqueuer's ``Driver`` over two connections: queries on one, LISTEN on the other.

pgqueuer's ``PsycopgDriver`` waits for notifications with
``connection.notifies(timeout=1.0)`` on the same connection its queries use,
and psycopg holds a connection's lock while it waits: a dequeue issued in
that window waits for the timeout. On a worker that meant jobs started in
pairs about a second apart, whatever the poll interval (measured: 20 jobs of
20 ms on one worker took 9.2 s to start; with this driver, well under a
second). Listening on a connection of its own leaves the query connection
free; only the ``Driver`` protocol's public methods are used.
"""

from __future__ import annotations

import asyncio
from typing import Any, Self

from pgqueuer import PsycopgDriver

__all__ = ["SplitDriver"]


class SplitDriver:
    """Runs pgqueuer's queries on ``queries`` and its LISTEN watcher on ``listen``."""

    def __init__(self, queries: Any, listen: Any) -> None:
        self._queries = PsycopgDriver(queries)
        self._listen = PsycopgDriver(listen)

    async def fetch(self, query: str, *args: object) -> list[dict[str, object]]:
        """Rows of ``query`` (on the query connection)."""
        return await self._queries.fetch(query, *args)

    async def execute(self, query: str, *args: object) -> str:
        """Run ``query`` (on the query connection); its status message."""
        return await self._queries.execute(query, *args)

    async def notify(self, channel: str, payload: str) -> None:
        """``NOTIFY`` (on the query connection)."""
        await self._queries.notify(channel, payload)

    async def add_listener(self, channel: str, callback: Any) -> None:
        """``LISTEN`` on the listening connection; ``callback`` gets each payload."""
        await self._listen.add_listener(channel, callback)

    @property
    def shutdown(self) -> asyncio.Event:
        """Set when the driver stops (the listening side's watcher ends with it)."""
        return self._listen.shutdown

    @property
    def tm(self) -> Any:
        """The listening side's background tasks (its notify watcher)."""
        return self._listen.tm

    async def __aenter__(self) -> Self:
        await self._queries.__aenter__()
        await self._listen.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._listen.__aexit__(*exc)
        await self._queries.__aexit__(*exc)
