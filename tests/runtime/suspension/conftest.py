"""Fixtures of the suspension tests."""

from __future__ import annotations

import sys
from pathlib import Path

# The tests import their agent and checks (suspension_rig) from this folder.
sys.path.insert(0, str(Path(__file__).parent))
