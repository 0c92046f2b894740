"""The ingress's tables: pgqueuer's queue plus a cancel list, in one PostgreSQL schema."""

from __future__ import annotations

import re

import psycopg
from pgqueuer import PsycopgDriver, Queries

__all__ = ["CANCEL_CHANNEL", "connect", "install", "valid_schema"]

CANCEL_CHANNEL = "awaken_ingress_cancel"
"""NOTIFY channel a cancel is announced on (payload: the run id)."""

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def valid_schema(schema: str) -> str:
    """``schema`` if it is a plain PostgreSQL identifier; else ``ValueError`` naming it."""
    if not _NAME.fullmatch(schema):
        raise ValueError(
            f"ingress schema {schema!r} is not a plain identifier: use lowercase letters, "
            f"digits and '_' (up to 63 characters, not starting with a digit)"
        )
    return schema


async def connect(dsn: str, schema: str) -> psycopg.AsyncConnection[tuple[object, ...]]:
    """An autocommit connection whose ``search_path`` is the ingress schema."""
    return await psycopg.AsyncConnection.connect(
        dsn, autocommit=True, options=f"-c search_path={valid_schema(schema)}"
    )


async def install(conn: psycopg.AsyncConnection[tuple[object, ...]], schema: str) -> None:
    """Create the schema, pgqueuer's tables and the cancel list, once (safe to race)."""
    await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'.encode())
    # One installer at a time: pgqueuer's install is not idempotent.
    await conn.execute(b"SELECT pg_advisory_lock(hashtext('awaken_run_ingress_install'))")
    try:
        queries = Queries(PsycopgDriver(conn))
        if not await queries.schema_is_installed():
            await queries.install(create_schema=False)
        await conn.execute(
            b"CREATE TABLE IF NOT EXISTS awaken_ingress_cancels ("
            b"run_id text PRIMARY KEY, requested_at timestamptz NOT NULL DEFAULT now())"
        )
    finally:
        await conn.execute(b"SELECT pg_advisory_unlock(hashtext('awaken_run_ingress_install'))")
