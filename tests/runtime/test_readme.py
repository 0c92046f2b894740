"""The runtime README's complete plugin example runs as written and prints what it says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "packages" / "awaken-runtime" / "README.md"


def _example(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^### {re.escape(heading)}\n.*?```python\n(.*?)```", text, re.M | re.S)
    assert match, f"no python block under '### {heading}' in the runtime README"
    return match.group(1)


def test_complete_plugin_example_runs_as_written(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_example("A complete plugin"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    bound_line, result_line = done.stdout.strip().splitlines()  # what the README says
    bound = json.loads(bound_line.replace("'", '"'))
    assert bound == {
        "state_keys": [{"key": "tally.steps", "scope": "thread"}],
        "phase_hooks": ["before_inference", "step_end"],
        "context_bands": ["system"],
    }
    assert result_line == "2 Answer in one word."
