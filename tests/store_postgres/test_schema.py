"""Schema versions: created and migrated on open, newer / foreign / damaged schemas refused."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from awaken_runtime import Message, ScopeBinding
from awaken_runtime.stores import StoreCorrupt, StoreIOError, StoreSchemaError
from awaken_store_postgres import SCHEMA_VERSION, PostgresSchemaError, PostgresStore
from awaken_store_postgres._cli import main
from awaken_store_postgres._schema import migrate


def sql(dsn: str, *statements: str) -> list[tuple[object, ...]]:
    """Run statements on a fresh connection; the rows of the last one (if any)."""
    rows: list[tuple[object, ...]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            cur = conn.execute(statement.encode())
            rows = cur.fetchall() if cur.description else []
    return rows


async def test_open_creates_the_schema_at_the_current_version(dsn: str, schema: str) -> None:
    async with PostgresStore(dsn, schema=schema) as store:
        await store.commit(ScopeBinding("t", "p", "n"), 0, [Message.user("hi")], [])
    assert sql(dsn, f"SELECT version FROM {schema}.awaken_schema") == [(SCHEMA_VERSION,)]
    async with PostgresStore(dsn, schema=schema) as again:  # reopening changes nothing
        assert (await again.load(ScopeBinding("t", "p", "n"))).version == 1
    assert sql(dsn, f"SELECT count(*) FROM {schema}.awaken_schema") == [(1,)]


async def test_a_newer_schema_is_refused_naming_both_versions(dsn: str, schema: str) -> None:
    async with PostgresStore(dsn, schema=schema):
        pass
    newer = SCHEMA_VERSION + 3
    sql(dsn, f"UPDATE {schema}.awaken_schema SET version = {newer}")
    with pytest.raises(PostgresSchemaError) as info:
        await PostgresStore(dsn, schema=schema).open()
    err = info.value
    assert isinstance(err, StoreSchemaError)
    assert (err.found, err.supported) == (newer, SCHEMA_VERSION)
    assert f"version {newer}" in str(err) and f"up to version {SCHEMA_VERSION}" in str(err)
    assert "upgrade awaken-store-postgres" in str(err)
    # Lazily opened (first call) the same refusal comes before any data is touched.
    with pytest.raises(PostgresSchemaError):
        await PostgresStore(dsn, schema=schema).load(ScopeBinding("t", "p", "n"))
    assert sql(dsn, f"SELECT version FROM {schema}.awaken_schema") == [(newer,)]


async def test_migrate_false_refuses_an_older_or_missing_schema(dsn: str, schema: str) -> None:
    with pytest.raises(PostgresSchemaError) as info:
        await PostgresStore(dsn, schema=schema, migrate=False).open()
    assert info.value.found == 0 and "awaken-store-postgres migrate" in str(info.value)
    assert sql(dsn, f"SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}'") == [(0,)]
    async with PostgresStore(dsn, schema=schema):
        pass
    async with PostgresStore(dsn, schema=schema, migrate=False) as store:
        assert (await store.load(ScopeBinding("t", "p", "n"))).version == 0


async def test_an_older_schema_is_migrated_forward(dsn: str, schema: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        assert await migrate(conn, schema, target=0) == 0  # an empty store at version 0
    assert sql(dsn, f"SELECT version FROM {schema}.awaken_schema") == [(0,)]
    async with PostgresStore(dsn, schema=schema) as store:
        assert await store.commit(ScopeBinding("t", "p", "n"), 0, [], []) == 1
    assert sql(dsn, f"SELECT version FROM {schema}.awaken_schema") == [(SCHEMA_VERSION,)]


async def test_a_schema_of_foreign_tables_is_refused_untouched(dsn: str, schema: str) -> None:
    sql(dsn, f"CREATE SCHEMA {schema}", f"CREATE TABLE {schema}.invoices (id int)")
    with pytest.raises(StoreCorrupt) as info:
        await PostgresStore(dsn, schema=schema).open()
    assert "invoices" in str(info.value) and "not an awaken store" in str(info.value)
    tables = f"SELECT table_name FROM information_schema.tables WHERE table_schema='{schema}'"
    assert sql(dsn, tables) == [("invoices",)]


@pytest.mark.parametrize(
    "damage",
    [
        "DELETE FROM {s}.awaken_schema",
        "INSERT INTO {s}.awaken_schema VALUES (1)",
        "UPDATE {s}.awaken_schema SET version = -4",
    ],
)
async def test_a_damaged_version_table_is_refused(dsn: str, schema: str, damage: str) -> None:
    async with PostgresStore(dsn, schema=schema):
        pass
    sql(dsn, damage.format(s=schema))
    with pytest.raises(StoreCorrupt) as info:
        await PostgresStore(dsn, schema=schema).open()
    assert "awaken_schema" in str(info.value)


async def test_a_dropped_table_is_a_typed_error(dsn: str, schema: str) -> None:
    async with PostgresStore(dsn, schema=schema) as store:
        sql(dsn, f"DROP TABLE {schema}.messages")
        with pytest.raises(StoreCorrupt) as info:
            await store.commit(ScopeBinding("t", "p", "n"), 0, [Message.user("x")], [])
        assert "missing" in str(info.value)


async def test_workers_opening_at_once_migrate_once(dsn: str, schema: str) -> None:
    stores = [PostgresStore(dsn, schema=schema) for _ in range(6)]
    await asyncio.gather(*(s.open() for s in stores))
    versions = await asyncio.gather(
        *(s.commit(ScopeBinding(f"t{i}", "p", "n"), 0, [], []) for i, s in enumerate(stores))
    )
    assert versions == [1] * 6
    for s in stores:
        await s.close()
    assert sql(dsn, f"SELECT version FROM {schema}.awaken_schema") == [(SCHEMA_VERSION,)]


def test_bad_schema_names_and_unreachable_servers_are_typed_errors() -> None:
    for name in ("Awaken", "a-b", "1x", "x; DROP TABLE y", "", "a" * 64):
        with pytest.raises(ValueError, match="not a plain identifier"):
            PostgresStore("postgresql://nobody@127.0.0.1:1/x", schema=name)


async def test_an_unreachable_server_is_a_store_io_error() -> None:
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/x?connect_timeout=2", schema="awaken")
    with pytest.raises(StoreIOError, match="could not open"):
        await store.open()


def test_the_check_command(dsn: str, schema: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", dsn, "--schema", schema]) == 2  # absent: needs a migrate
    assert "run `awaken-store-postgres migrate`" in capsys.readouterr().out
    assert main(["migrate", dsn, "--schema", schema]) == 0
    assert main(["check", dsn, "--schema", schema]) == 0
    assert "up to date" in capsys.readouterr().out
    sql(dsn, f"UPDATE {schema}.awaken_schema SET version = {SCHEMA_VERSION + 1}")
    assert main(["check", dsn, "--schema", schema]) == 1
    assert "upgrade awaken-store-postgres" in capsys.readouterr().err
    assert main(["migrate", dsn, "--schema", schema]) == 1  # never downgraded
    assert sql(dsn, f"SELECT version FROM {schema}.awaken_schema") == [(SCHEMA_VERSION + 1,)]
