"""The working import: builder + tool + model spec + one scripted run, in fresh interpreters.

Compared with ``import asyncio, pluggy; from pydantic import BaseModel, TypeAdapter``
(the libraries the runtime is built on), 7 fresh interpreters each, interleaved;
the median wall time of each, interpreter start-up included. Target: at most 1.5x.

Both run with a bytecode cache (in a temporary ``PYTHONPYCACHEPREFIX``, filled by
the warm-up runs), as an installed package has: the libraries of the baseline load
from the ``.pyc`` files their installer wrote, while a source checkout under
``PYTHONDONTWRITEBYTECODE=1`` (set on this machine) would recompile every awaken
module in every interpreter, which no installation does.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from _section import emit, parse

BASELINE = "import asyncio, pluggy; from pydantic import BaseModel, TypeAdapter"
WORKING = """
import asyncio
from awaken_runtime import (
    AgentConfig, AgentRuntimeBuilder, ModelSpec, ScriptedExecutor, ScriptedTurn, tool,
)

@tool
def echo(text: str) -> str:
    \"\"\"Echo the text.\"\"\"
    return text

async def main():
    executor = ScriptedExecutor([ScriptedTurn.call("echo", {"text": "x"}), "done"])
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_tool(echo)
        .with_model(ModelSpec(id="m", provider="scripted", model="scripted"))
        .with_provider("scripted", executor)
        .with_agent_spec(AgentConfig(id="a", model_binding="m", tool_ids=["echo"]))
        .build()
    )
    state = await runtime.run("a", "hello", thread_id="t")
    assert state.final_text == "done", state.end_cause

asyncio.run(main())
"""


def _time(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    args = parse(__doc__)
    n = 3 if args.quick else 7
    with tempfile.TemporaryDirectory(prefix="awaken-pyc-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        _time(BASELINE, env)
        _time(WORKING, env)  # warm the OS file cache and the bytecode cache for both
        base, work = [], []
        for _ in range(n):
            base.append(_time(BASELINE, env))
            work.append(_time(WORKING, env))
    b, w = statistics.median(base), statistics.median(work)
    emit(
        args,
        title="working import (builder + tool + model + one scripted run), fresh interpreters",
        columns=["what", "median ms", "runs", "ratio"],
        rows=[["baseline", b * 1e3, n, 1.0], ["working import", w * 1e3, n, w / b]],
        checks=[(f"working import <= 1.5x baseline ({w / b:.2f}x)", w / b <= 1.5)],
        notes=["both with a bytecode cache (a temporary PYTHONPYCACHEPREFIX), as installed"],
    )


if __name__ == "__main__":
    main()
