"""``open_store("postgresql://...")`` through the ``awaken.stores`` entry point."""

from __future__ import annotations

import pytest

from awaken_runtime import AwakenError, Message, ScopeBinding
from awaken_runtime.stores import open_store
from awaken_store_postgres import PostgresStore


def test_the_url_options_are_the_stores_and_the_rest_goes_to_libpq() -> None:
    store = open_store(
        "postgresql://app@db.internal:5433/prod?schema=tenant_a&lease_ttl=7.5"
        "&durable=false&max_size=9&sslmode=require"
    )
    assert isinstance(store, PostgresStore)
    assert store.lease_ttl == 7.5 and store.db.schema == "tenant_a"
    assert store.db.dsn == "postgresql://app@db.internal:5433/prod?sslmode=require"
    assert store.db.pool.max_size == 9
    assert isinstance(open_store("postgres://h/db"), PostgresStore)


@pytest.mark.parametrize(
    ("query", "message"),
    [("lease_ttl=soon", "lease_ttl must be a number"), ("durable=maybe", "durable must be")],
)
def test_bad_options_name_the_option(query: str, message: str) -> None:
    with pytest.raises(AwakenError, match=message):
        open_store(f"postgresql://h/db?{query}")


def test_an_unknown_scheme_lists_the_installed_ones() -> None:
    with pytest.raises(AwakenError) as info:
        open_store("mongodb://h/db")
    assert "postgresql://" in str(info.value) and "sqlite:///" in str(info.value)


async def test_a_url_store_opens_on_first_use(dsn: str, schema: str) -> None:
    store = open_store(f"{dsn}?schema={schema}")
    try:
        b = ScopeBinding("t", "p", "n")
        assert await store.commit(b, 0, [Message.user("hi")], []) == 1
        assert [m.text for m in (await store.load(b)).messages] == ["hi"]
    finally:
        await store.close()
