"""The README's entry points: `awaken demo`, `awaken plugins`, `awaken --help`, and the
runtime README's quickstart snippet."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "packages" / "awaken-runtime" / "README.md"


def awaken(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from awaken_runtime.cli._main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"AWAKEN_STORE": "memory://", "PATH": "/usr/bin:/bin"},
    )


def test_demo_streams_a_tool_using_run_with_usage_and_cost() -> None:
    done = awaken("demo")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "-> lookup_weather" in out and "<- [success]" in out
    assert "In Lisbon it is 69.8°F (21°C) with clear skies." in out
    assert re.search(r"run ended: natural_end · \d+ tokens .* · \$0\.\d+", out)


def test_help_does_not_import_litellm() -> None:
    code = (
        "import sys\nfrom awaken_runtime.cli._main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('litellm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "demo" in done.stdout and done.stdout.strip().endswith("False")


def test_plugins_lists_the_installed_first_party_extensions() -> None:
    done = awaken("plugins", "--json")
    listing = json.loads(done.stdout)
    ids = {p["id"] for p in listing["plugins"]}
    assert {"compact", "memory", "skills", "permissions"} <= ids
    assert {"id": "litellm", "distribution": "awaken-runtime"} in listing["providers"]
    assert listing["errors"] == [] and done.returncode == 0


def test_runtime_readme_quickstart_runs() -> None:
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    done = subprocess.run(
        [sys.executable, "-c", block.group(1)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("3 ")


def test_reasoning_is_shown_apart_from_the_answer() -> None:
    from awaken_runtime import RunFinish, StepStart, TextDelta, TokenUsage
    from awaken_runtime.cli._demo import render_event

    out: list[str] = []
    events = [
        StepStart(seq=1, run_id="r", step=1),
        TextDelta(seq=2, run_id="r", channel="reasoning", delta="THOU"),
        TextDelta(seq=3, run_id="r", channel="reasoning", delta="GHTS"),
        TextDelta(seq=4, run_id="r", delta="ANS"),
        TextDelta(seq=5, run_id="r", delta="WER"),
        RunFinish(seq=6, run_id="r", phase="ended", usage=TokenUsage()),
    ]
    for event in events:
        render_event(event, out.append)
    text = "".join(out)
    assert "(thinking) THOUGHTS\nANSWER" in text
    assert "THOUGHTSANSWER" not in text
