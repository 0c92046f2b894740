"""The shared conformance suite for Awaken store backends.

Subclass :class:`StoreConformance` and give it one fixture, ``store``, that
yields a fresh, empty store; every test of the suite then runs against it::

    import pytest
    from awaken_store_conformance import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        async def store(self, tmp_path):
            store = MyStore(tmp_path / "db")
            yield store
            await store.close()

Optionally override ``store_opener`` to return a picklable zero-argument
callable that opens the same store in another process; the two-process
test runs only then. The package is also a pytest plugin (``pytest11``
entry point): installed, it registers the ``store_conformance`` marker.
"""

from __future__ import annotations

import pytest

from ._helpers import (
    batch,
    binding,
    canonical,
    commit_retry,
    parked_run,
    run_record,
    tool_history,
)
from ._suite_admin import AdminSuite
from ._suite_edges import EdgeSuite
from ._suite_state import StateSuite
from ._suite_threads import ThreadSuite

__all__ = [
    "AdminSuite",
    "EdgeSuite",
    "StateSuite",
    "StoreConformance",
    "ThreadSuite",
    "batch",
    "binding",
    "canonical",
    "commit_retry",
    "parked_run",
    "run_record",
    "tool_history",
]

__version__ = "0.1.0"


@pytest.mark.store_conformance
class StoreConformance(ThreadSuite, StateSuite, AdminSuite, EdgeSuite):
    """The whole suite. Subclasses provide the ``store`` fixture (a fresh store)."""
