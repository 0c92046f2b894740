"""Helper of ``test_paused_holder.py``: a run whose holder is paused past its lease.

    python paused_holder.py STORE_URL THREAD MARK_FILE OUT_FILE

runs the ``stepper`` agent (five steps, one ``work`` call each, then "done")
on ``THREAD`` of the store at ``STORE_URL``. Step 2's call creates
``MARK_FILE`` and then sleeps a moment: the test stops this process there
(SIGSTOP), past the lease, and lets another runtime take the run over. The
``RunState`` this process ends with is written to ``OUT_FILE`` as JSON.

The test builds the runtime that takes over with :func:`build_runtime` too:
its scripted model asks for the next step from the transcript, so a run
continued elsewhere asks for the step in flight again, under the same call id.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    Runtime,
    ScriptedExecutor,
    ScriptedTurn,
    ToolCall,
    ToolCallContext,
    tool,
)

STEPS = 5


def turn(request: Any) -> ScriptedTurn | str:
    """The next step's call, from the results already in the transcript; "done" after five."""
    done = sum(1 for m in request.messages if m.role == "tool")
    if done >= STEPS:
        return "done"
    step = done + 1
    return ScriptedTurn(tool_calls=[ToolCall(id=f"s{step}", name="work", arguments={"step": step})])


def build_runtime(store: Any, on_step: Callable[[int, str], Any]) -> Runtime:
    """The ``stepper`` agent on ``store``, progress records on; ``work`` awaits
    ``on_step(step, pid-tagged result)`` and returns what it returns."""

    @tool
    async def work(step: int, ctx: ToolCallContext) -> str:
        """Do one step of work."""
        result = on_step(step, f"step {step} done")
        if asyncio.iscoroutine(result):
            result = await result
        return str(result)

    return (
        AgentRuntimeBuilder(discover=False)
        .with_store(store)
        .with_progress_records()
        .with_model(ModelSpec(id="m", provider="scripted", model="s"))
        .with_provider("scripted", ScriptedExecutor([turn], repeat=True))
        .with_tool(work)
        .with_agent_spec(AgentConfig(id="stepper", model_binding="m", tool_ids=["work"]))
        .build()
    )


async def _main(url: str, thread: str, mark: Path, out: Path) -> None:
    from awaken_runtime.stores import open_store

    store = open_store(url)

    def on_step(step: int, result: str) -> str:
        if step == 2:
            mark.write_text(str(os.getpid()))
            time.sleep(0.5)  # stopped here by the test; blocking, so no renewal either
        return result

    runtime = build_runtime(store, on_step)
    try:
        state = await runtime.run("stepper", "go", thread_id=thread, run_id="run-paused")
        out.write_text(state.model_dump_json())
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])))
