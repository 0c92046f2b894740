"""Fixtures of the awaken-protocol-acp tests: ``awaken acp`` spawned over real stdio."""

from __future__ import annotations

import sys
from pathlib import Path

# The tests import their helpers (acp_rig) from this folder.
sys.path.insert(0, str(Path(__file__).parent))
