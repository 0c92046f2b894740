"""``awaken-store-postgres check|migrate DSN [--schema NAME]``: schema checks for deploys.

``check`` changes nothing and exits 1 when the schema is newer than this
code, damaged or not an awaken store (2 when it is older or absent: run
``migrate``); a deploy runs it before starting workers. ``migrate``
creates or upgrades the schema.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import psycopg

from awaken_runtime.stores import StoreError

from ._schema import SCHEMA_VERSION, check_schema, migrate, valid_schema

__all__ = ["main"]


async def _run(command: str, dsn: str, schema: str) -> int:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        if command == "migrate":
            found = await migrate(conn, schema)
            print(f"schema {schema!r}: version {found} -> {SCHEMA_VERSION}")
            return 0
        found = await check_schema(conn, schema)
    if found < SCHEMA_VERSION:
        print(
            f"schema {schema!r} is at version {found}, this code writes {SCHEMA_VERSION}: run "
            f"`awaken-store-postgres migrate` (or open the store, which migrates)"
        )
        return 2
    print(f"schema {schema!r} is at version {found}: up to date")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``awaken-store-postgres`` command."""
    parser = argparse.ArgumentParser(prog="awaken-store-postgres", description=__doc__)
    parser.add_argument("command", choices=["check", "migrate"])
    parser.add_argument("dsn", help="libpq connection string, e.g. postgresql://user@host/db")
    parser.add_argument("--schema", default="awaken", help="the store's schema (default awaken)")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_run(args.command, args.dsn, valid_schema(args.schema)))
    except (StoreError, ValueError, psycopg.Error) as exc:
        print(f"awaken-store-postgres {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
