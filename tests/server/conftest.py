"""Fixtures of the server tests: one real ``awaken serve`` for the session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tests import their helpers (srv_util, sse_util) from this folder.
sys.path.insert(0, str(Path(__file__).parent))

from srv_util import Served, start_server, stop_server


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = start_server(tmp_path_factory.mktemp("server"))
    yield served
    stop_server(served)


@pytest.fixture(scope="session")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server of its own for fuzzing: fuzzed publishes must not change the other tests'
    agents."""
    served = start_server(tmp_path_factory.mktemp("fuzzed"))
    yield served
    stop_server(served)
