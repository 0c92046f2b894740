"""Fixtures of the awaken-mcp tests."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

# The tests import their helpers (mcp_rig) from this folder.
sys.path.insert(0, str(Path(__file__).parent))

from awaken_runtime import Runtime


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks.txt"
    path.touch()
    return path


@pytest.fixture
async def closing() -> AsyncIterator[list[Runtime]]:
    """Runtimes appended here are closed after the test (their servers exit)."""
    runtimes: list[Runtime] = []
    yield runtimes
    for rt in runtimes:
        await rt.aclose()
