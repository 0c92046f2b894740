"""The working import: builder + tool + model spec + one scripted run, in fresh interpreters.

Compared with ``import asyncio, pluggy; from pydantic import BaseModel, TypeAdapter``
(the libraries the runtime is built on), 7 fresh interpreters each, interleaved;
the median wall time of each, interpreter start-up included. Target: at most 1.5x.

Two control rows split the working import's figure (neither is checked):

* ``one pydantic model``: the baseline, then one two-field model defined and
  validated once. Pydantic's first validator in a process loads its plugin
  machinery (``importlib.metadata``, and a scan of every installed
  distribution's entry points) and its field machinery (``annotated_types``,
  ``pydantic.types``); the baseline imports ``BaseModel`` but builds nothing,
  so it pays neither, while every program that validates one pydantic model,
  awaken's ``ModelSpec(...)`` included, pays both once. Awaken's own share is
  the working import minus this row.
* ``names only``: the working import's ``from awaken_runtime import ...`` with
  no runtime built and no run, to split importing and defining awaken's types
  from building the runtime and running it.

With ``--beside ROOT`` (the driver's), one more row times the working import
of that checkout (its package sources first on ``PYTHONPATH``, its own bytecode
cache) in the same interleaved rounds, with the per-round ratio of the two in
a note: the baseline of two separate runs can differ by a fifth on a shared
machine, which moves each run's ratio more than the change being compared.

All run with a bytecode cache (in a temporary ``PYTHONPYCACHEPREFIX``, filled by
the warm-up runs), as an installed package has: the libraries of the baseline load
from the ``.pyc`` files their installer wrote, while a source checkout under
``PYTHONDONTWRITEBYTECODE=1`` (set on this machine) would recompile every awaken
module in every interpreter, which no installation does.
"""

from __future__ import annotations

import contextlib
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
FLOOR = (
    BASELINE
    + """
class Order(BaseModel):
    id: int
    note: str = ""

Order(id=1)
"""
)
NAMES = (
    BASELINE
    + """
from awaken_runtime import (
    AgentConfig, AgentRuntimeBuilder, ModelSpec, ScriptedExecutor, ScriptedTurn, tool,
)
"""
)
CASES = {
    "baseline": BASELINE,
    "one pydantic model (control)": FLOOR,
    "names only (control)": NAMES,
    "working import": WORKING,
}


BESIDE = "working import, beside"


def _time(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    args = parse(__doc__)
    n = 3 if args.quick else 7
    beside = os.environ.get("REAL_PATH_BESIDE")
    with contextlib.ExitStack() as stack:
        cache = stack.enter_context(tempfile.TemporaryDirectory(prefix="awaken-pyc-"))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        cases = {name: (code, env) for name, code in CASES.items()}
        if beside:  # its own bytecode cache: the two checkouts' modules share names
            beside_cache = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="awaken-pyc-beside-")
            )
            beside_env = dict(env, PYTHONPYCACHEPREFIX=beside_cache)
            beside_env["PYTHONPATH"] = os.pathsep.join([beside, env.get("PYTHONPATH", "")])
            cases[BESIDE] = (WORKING, beside_env)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for code, case_env in cases.values():  # warm the OS file cache and the bytecode caches
            _time(code, case_env)
        for _ in range(n):
            for name, (code, case_env) in cases.items():
                times[name].append(_time(code, case_env))
    med = {name: statistics.median(t) for name, t in times.items()}
    b, w, floor = med["baseline"], med["working import"], med["one pydantic model (control)"]
    notes = []
    if beside:
        label = os.environ.get("REAL_PATH_BESIDE_LABEL", "the other checkout")
        paired = statistics.median(
            a / o for a, o in zip(times["working import"], times[BESIDE], strict=True)
        )
        notes.append(
            f"'{BESIDE}': the working import of {label}, in the same rounds; this checkout's "
            f"over it, per round: {paired:.2f}x"
        )
    emit(
        args,
        title="working import (builder + tool + model + one scripted run), fresh interpreters",
        columns=["what", "median ms", "runs", "ratio"],
        rows=[[name, t * 1e3, n, t / b] for name, t in med.items()],
        checks=[(f"working import <= 1.5x baseline ({w / b:.2f}x)", w / b <= 1.5)],
        notes=[
            *notes,
            "all with a bytecode cache (a temporary PYTHONPYCACHEPREFIX), as installed",
            f"awaken's own share (working import - one pydantic model): {(w - floor) * 1e3:.0f} ms"
            f" = {(w - floor) / b:.2f}x the baseline; the target leaves it "
            f"{max(1.5 * b - floor, 0.0) * 1e3:.0f} ms",
        ],
    )


if __name__ == "__main__":
    main()
