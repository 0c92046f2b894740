"""Every built-in backend runs the shared conformance suite."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime.stores import FileStore, InMemoryStore, SQLiteStore
from awaken_store_conformance import StoreConformance


class TestInMemoryStore(StoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[Any]:
        yield InMemoryStore()


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Any]:
        store = SQLiteStore(tmp_path / "awaken.db")
        yield store
        await store.close()

    @pytest.fixture
    def store_opener(self, tmp_path: Path) -> Any:
        return functools.partial(SQLiteStore, tmp_path / "awaken.db")


class TestFileStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Any]:
        store = FileStore(tmp_path / "files")
        yield store
        await store.close()

    @pytest.fixture
    def store_opener(self, tmp_path: Path) -> Any:
        return functools.partial(FileStore, tmp_path / "files")
