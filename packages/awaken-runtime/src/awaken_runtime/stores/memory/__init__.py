"""The in-memory backend (``memory://``): every port in process memory.

``_core.py`` is the data model (threads, scoped state, runs, event logs,
configs, leases) with commit validation; the file backend keeps one as its
mirror. ``_store.py`` is :class:`InMemoryStore` over it.
"""

from __future__ import annotations

from ._store import InMemoryStore

__all__ = ["InMemoryStore"]
