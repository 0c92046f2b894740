"""The connection pool and transactions of one store, opened (and migrated) on first use."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext, suppress

import psycopg
from psycopg_pool import AsyncConnectionPool

from ._errors import CommitOutcomeUnknown, PostgresSchemaError, translate
from ._schema import SCHEMA_VERSION, check_schema, migrate, valid_schema
from ._state_sql import Conn

__all__ = ["Database"]

_BEGIN = "BEGIN"
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


def _options(schema: str, durable: bool) -> str:
    options = f"-c search_path={schema}"
    # Off: COMMIT returns before the WAL flush; a server crash may lose the last
    # ~0.6 s of commits (never corrupts), a killed client loses nothing committed.
    return options if durable else options + " -c synchronous_commit=off"


class Database:
    """A pool of autocommit connections whose ``search_path`` is the store's schema."""

    def __init__(
        self,
        dsn: str,
        schema: str,
        *,
        min_size: int = 1,
        max_size: int = 4,
        migrate: bool = True,
        durable: bool = True,
    ) -> None:
        self.dsn = dsn
        self.schema = valid_schema(schema)
        self.where = f"postgres schema {schema!r}"
        self.auto_migrate = migrate
        self.pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True, "options": _options(schema, durable)},
        )
        self._ready = False
        self._lock: asyncio.Lock | None = None

    async def open(self) -> None:
        """Open the pool and migrate the schema (or check it, with ``migrate=False``)."""
        if self._ready:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._ready:
                return
            try:
                async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as c:
                    if self.auto_migrate:
                        await migrate(c, self.schema)
                    elif (found := await check_schema(c, self.schema)) < SCHEMA_VERSION:
                        raise PostgresSchemaError(self.where, found, SCHEMA_VERSION)
            except psycopg.Error as exc:
                raise translate(self.where, "open", exc) from exc
            await self.pool.open(wait=True)
            self._ready = True

    @asynccontextmanager
    async def tx(
        self,
        action: str,
        *,
        write: bool = True,
        thread_id: str | None = None,
        pipeline: bool = False,
    ) -> AsyncIterator[Conn]:
        """One transaction; a read is one consistent snapshot (REPEATABLE READ, read only).

        psycopg errors become typed store errors. Nothing is committed unless
        the block ends normally; if the connection breaks once COMMIT of a
        write is sent, ``CommitOutcomeUnknown`` says so (naming ``thread_id``
        for a thread commit). With ``pipeline`` the connection is in pipeline mode: BEGIN,
        the block's statements and COMMIT go out without waiting for each
        other, and a result is awaited only when the block fetches it.
        """
        await self.open()
        committing = False
        try:
            async with self.pool.connection() as conn, self._mode(conn, pipeline):
                await conn.execute(_BEGIN if write else _BEGIN_READ)
                try:
                    yield conn
                    committing = True
                    await conn.execute("COMMIT")
                except BaseException:
                    if not committing:
                        with suppress(psycopg.Error):  # the connection may be gone
                            await conn.execute("ROLLBACK")
                    raise
        except psycopg.Error as exc:
            if committing and write and isinstance(exc, psycopg.OperationalError):
                raise CommitOutcomeUnknown(self.where, action, exc, thread_id) from exc
            raise translate(self.where, action, exc) from exc

    @staticmethod
    def _mode(conn: Conn, pipeline: bool) -> AbstractAsyncContextManager[object]:
        return conn.pipeline() if pipeline else nullcontext()

    async def close(self) -> None:
        """Close every connection."""
        await self.pool.close()
