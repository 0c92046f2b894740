"""Fixtures: the test server's DSN (a clear skip without it) and private schemas."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

DSN_ENV = "AWAKEN_TEST_POSTGRES_DSN"
HERE = Path(__file__).parent


@dataclass(frozen=True)
class Schemas:
    """One test's queue, store and ledger schemas on the test server."""

    dsn: str
    queue: str
    store: str
    ledger: str

    def store_url(self, lease_ttl: float = 2.0) -> str:
        return f"{self.dsn}?schema={self.store}&lease_ttl={lease_ttl}"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a worker process running ``ingress_agents``."""
        path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
        return {
            **os.environ,
            "PYTHONPATH": path,
            "PYTHONUNBUFFERED": "1",
            "AWAKEN_INGRESS_LEDGER": self.dsn,
            "AWAKEN_INGRESS_LEDGER_SCHEMA": self.ledger,
            **extra,
        }


@pytest.fixture
def schemas() -> Iterator[Schemas]:
    dsn = os.environ.get(DSN_ENV)
    if not dsn:
        pytest.skip(f"{DSN_ENV} is not set (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    tag = os.urandom(5).hex()
    found = Schemas(dsn, f"ingress_q_{tag}", f"ingress_s_{tag}", f"ingress_l_{tag}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{found.ledger}"'.encode())
        conn.execute(
            f'CREATE TABLE "{found.ledger}".ledger (run_id text, step int, key text, '
            f"PRIMARY KEY (run_id, step))".encode()
        )
        conn.execute(
            f'CREATE TABLE "{found.ledger}".executions (run_id text, step int, pid int, '
            f"at double precision)".encode()
        )
    yield found
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in (found.queue, found.store, found.ledger):
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'.encode())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts worker processes or takes seconds")
