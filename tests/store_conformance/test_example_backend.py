"""How a third-party backend plugs into the conformance suite.

``AuditedStore`` stands for a backend shipped outside this repository: it
wraps any store and keeps an audit trail of every port call (a pattern for
instrumentation or access-control layers). Plugging it in takes one class
with one fixture, ``store``, yielding a fresh store; the whole suite runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime.stores import FullStore, SQLiteStore
from awaken_store_conformance import StoreConformance


class AuditedStore:
    """A third-party-style backend: every port of ``inner``, with an audit trail."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target):
            return target

        async def audited(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await target(*args, **kwargs)

        return audited


class TestAuditedStore(StoreConformance):
    """The only thing a backend author writes: the ``store`` fixture."""

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Any]:
        store = AuditedStore(SQLiteStore(tmp_path / "audited.db"))
        yield store
        await store.close()


def test_the_example_implements_every_port(tmp_path: Path) -> None:
    store = AuditedStore(SQLiteStore(tmp_path / "x.db"))
    missing = [
        name
        for name in dir(FullStore)
        if not name.startswith("_") and not callable(getattr(store, name, None))
    ]
    assert missing == []
