"""The Postgres store runs the shared conformance suite, two-process cases included."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from awaken_store_conformance import StoreConformance
from awaken_store_postgres import PostgresStore


class TestPostgresStore(StoreConformance):
    """Each test gets a fresh schema (the ``store`` fixture of conftest.py)."""

    @pytest.fixture
    def store_opener(self, dsn: str, schema: str) -> Any:
        return functools.partial(PostgresStore, dsn, schema=schema)
