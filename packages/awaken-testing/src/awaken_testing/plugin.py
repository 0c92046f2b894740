"""The pytest plugin (``pytest11`` entry point ``awaken_testing``): the ``awaken`` fixture.

Installing ``awaken-testing`` is enough; pytest loads this module itself::

    def test_counts_steps(awaken):
        rig = awaken.rig(StepCounter(), turns=["hi"])
        rig.run_sync().assert_natural_end().assert_committed("thread:steps", 1)
"""

from __future__ import annotations

import pytest

from ._harness import PluginHarness

__all__ = ["awaken"]


@pytest.fixture
def awaken() -> PluginHarness:
    """Builds rigs: ``awaken.rig(plugin_or_id, turns=..., config=...)``."""
    return PluginHarness()
