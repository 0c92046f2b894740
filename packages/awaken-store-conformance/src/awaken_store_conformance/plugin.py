"""The pytest plugin (``pytest11`` entry point ``awaken_store_conformance``).

It registers the ``store_conformance`` marker, so ``pytest -m store_conformance``
selects the suite, and reports which backends ran it in the terminal summary.
"""

from __future__ import annotations

from typing import Any

import pytest

_ran: set[str] = set()


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker."""
    config.addinivalue_line(
        "markers", "store_conformance: a test of the shared store conformance suite"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Remember the classes that run the suite."""
    for item in items:
        cls = getattr(item, "cls", None)
        if item.get_closest_marker("store_conformance") is not None and cls is not None:
            _ran.add(cls.__qualname__)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the backends that ran the suite."""
    if _ran:
        terminalreporter.write_line("awaken store conformance ran for: " + ", ".join(sorted(_ran)))
