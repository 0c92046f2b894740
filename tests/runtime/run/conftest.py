"""The run's parts without a run, for their unit tests.

``make_parts(turns, tools=..., plugins=..., **agent_fields)`` resolves one
scripted agent (the ``make_runtime`` rig) and returns fresh ``Parts``: the
leg's ``RunDeps`` and ``LegState`` on thread ``t`` of the rig's in-memory
store (``parts.deps.store``), and the phase engine, inference and tool-call
executor over them; no loop. The folder is on ``sys.path`` for the helpers
the loop tests share (``loop_rig``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import ScopeBinding
from awaken_runtime.run._deps import RunDeps
from awaken_runtime.run._inference import Inference
from awaken_runtime.run._leg import LegState
from awaken_runtime.run._phases import PhaseEngine
from awaken_runtime.run._tool_calls import ToolCallExecutor

# The loop tests import their helpers (loop_rig) from this folder.
sys.path.insert(0, str(Path(__file__).parent))


class Parts:
    """One leg's explicit state and dependencies, and the parts that take them."""

    def __init__(self, deps: RunDeps, leg: LegState) -> None:
        self.deps = deps
        self.leg = leg
        self.phases = PhaseEngine(deps, leg)
        self.inference = Inference(deps, leg)
        self.calls = ToolCallExecutor(deps, leg, self.phases)


@pytest.fixture
def make_parts(make_runtime: Callable[..., Any]) -> Callable[..., Parts]:
    def build(turns: Any = ("done",), **kwargs: Any) -> Parts:
        rig = make_runtime(turns, **kwargs)
        resolved = rig.runtime._agent(rig.agent_id)
        deps = RunDeps(resolved, rig.store, ScopeBinding("t", "default", "default"), "run_1")
        return Parts(deps, LegState(None, deps.output_check()))

    return build
