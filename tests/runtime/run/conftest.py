"""A ``RunContext`` without a run, for the unit tests of the run's parts.

``make_context(turns, tools=..., plugins=..., **agent_fields)`` resolves one
scripted agent (the ``make_runtime`` rig) and returns a fresh ``RunContext``
on thread ``t`` of the rig's in-memory store (``ctx.store``). The folder is on
``sys.path`` for the helpers the loop tests share (``loop_rig``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import ScopeBinding
from awaken_runtime.run._run_context import RunContext

# The loop tests import their helpers (loop_rig) from this folder.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def make_context(make_runtime: Callable[..., Any]) -> Callable[..., RunContext]:
    def build(turns: Any = ("done",), **kwargs: Any) -> RunContext:
        rig = make_runtime(turns, **kwargs)
        resolved = rig.runtime._agent(rig.agent_id)
        return RunContext(resolved, rig.store, ScopeBinding("t", "default", "default"), "run_1")

    return build
