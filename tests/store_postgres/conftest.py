"""Fixtures: the server's DSN (skip without it) and a private schema per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import psycopg
import pytest

from awaken_store_postgres import PostgresStore

DSN_ENV = "AWAKEN_TEST_POSTGRES_DSN"


@pytest.fixture
def dsn() -> str:
    value = os.environ.get(DSN_ENV)
    if not value:
        pytest.skip(f"{DSN_ENV} is not set (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    return value


@pytest.fixture
def schema(dsn: str) -> Iterator[str]:
    """A schema name no other test uses; dropped afterwards (tests may run in parallel)."""
    name = "awaken_t_" + os.urandom(6).hex()
    yield name
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'.encode())


@pytest.fixture
async def store(dsn: str, schema: str) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore(dsn, schema=schema).open()
    yield store
    await store.close()


@pytest.fixture
def sql(dsn: str, schema: str) -> Callable[..., list[tuple[Any, ...]]]:
    """Run one statement in the test's schema behind the store's back (a hand edit, a
    damaged row): ``sql("UPDATE ... body=%s", body)``; the rows it returns, if any."""

    def run(statement: str, *args: object) -> list[tuple[Any, ...]]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"'.encode())
            cur = conn.execute(statement.encode(), args or None)
            return cur.fetchall() if cur.description is not None else []

    return run
