"""The SQLite backend (``sqlite:///path``): the embedded default, stdlib ``sqlite3`` in WAL mode.

``_store.py`` is :class:`SQLiteStore`, its port methods each one transaction;
``_io.py`` the connection thread that groups concurrent commits;
``_schema.py`` the schema, migrations and error mapping; ``_commit.py`` a
thread commit's SQL; ``_state.py`` field-wise state rows; ``_load.py``
loading a thread (decoding rows when first read, kept between loads);
``_chunks.py`` long threads' message chunks; ``_leases.py``, ``_logs.py``
(event logs, config versions) and ``_retention.py`` the other ports' SQL.
"""

from __future__ import annotations

from ._schema import SCHEMA_VERSION
from ._store import SQLiteStore

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]
