"""Fixtures of the awaken-protocol-a2a tests: real ``awaken a2a serve`` processes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tests import their helpers (a2a_rig) from this folder.
sys.path.insert(0, str(Path(__file__).parent))

from a2a_rig import CHILD_KEY, OTHER_KEY, PARENT_KEY, Served, free_port, start, stop


@pytest.fixture(scope="session")
def child(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The child agent's server: keys for profile alice (CHILD_KEY) and bob (OTHER_KEY)."""
    served = start(
        tmp_path_factory.mktemp("child"),
        "agents",
        "setup_child:setup",
        keys=f"{CHILD_KEY}:alice,{OTHER_KEY}:bob",
    )
    yield served
    stop(served)


@pytest.fixture(scope="session")
def parent(tmp_path_factory: pytest.TempPathFactory, child: Served) -> Iterator[Served]:
    """The parent agent's server, a second process whose delegate ``child`` is remote."""
    served = start(
        tmp_path_factory.mktemp("parent"),
        "agents_parent/parent.toml",
        "setup_parent:setup",
        keys=f"{PARENT_KEY}:pat",
        env={"CHILD_CARD_URL": child.card_url("child"), "CHILD_TOKEN": CHILD_KEY},
    )
    yield served
    stop(served)


@pytest.fixture(scope="session")
def orphan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A parent whose remote child is down (nothing listens on its port)."""
    dead = f"http://127.0.0.1:{free_port()}/a2a/child/.well-known/agent-card.json"
    served = start(
        tmp_path_factory.mktemp("orphan"),
        "agents_parent/parent.toml",
        "setup_parent:setup",
        keys=f"{PARENT_KEY}:pat",
        env={"CHILD_CARD_URL": dead, "CHILD_TOKEN": CHILD_KEY},
    )
    yield served
    stop(served)
