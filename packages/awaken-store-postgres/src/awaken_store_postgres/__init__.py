"""A PostgreSQL store for Awaken: every store port, shared by workers on many machines.

::

    from awaken_store_postgres import PostgresStore

    store = await PostgresStore("postgresql://user@host/db", schema="awaken").open()
    runtime = AgentRuntimeBuilder().with_store(store).build()

Commits are one transaction with the optimistic version check; the schema
is created or migrated on open and a newer one is refused
(:class:`PostgresSchemaError`); :meth:`PostgresStore.tail_events` follows a
run's event log live from any process (LISTEN/NOTIFY); leases are rows with
an expiry on the database's clock.
"""

from __future__ import annotations

from ._errors import CommitOutcomeUnknown, PostgresSchemaError, UnstorableText
from ._schema import SCHEMA_VERSION
from ._store import PostgresStore

__all__ = [
    "SCHEMA_VERSION",
    "CommitOutcomeUnknown",
    "PostgresSchemaError",
    "PostgresStore",
    "UnstorableText",
]

__version__ = "0.1.0"
