"""A scripted agent for the crash and cross-process tests (run as a script or loaded).

``python agent_script.py crash URL THREAD`` runs the ``worker`` agent on the
thread until it is killed: each step calls ``work(k)`` with the next k, whose
result stages thread state; every StepEnd prints ``step K`` (after its
checkpoint). ``python agent_script.py park URL THREAD`` runs the ``asker``
agent until it parks and prints the ticket as JSON.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    AwaitReason,
    Command,
    MergePolicy,
    ModelSpec,
    Runtime,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    StepEnd,
    SuspendCall,
    ThreadBusy,
    ToolCall,
    ToolOutput,
    tool,
)
from awaken_runtime.stores import open_store

FINAL_STEP = 1_000_000


def done_steps(messages: Any) -> int:
    """How many ``work`` results the transcript holds."""
    return sum(1 for m in messages if m.role == "tool" and m.text.startswith("done "))


def _worker_turn(request: Any) -> ScriptedTurn | str:
    k = done_steps(request.messages) + 1
    if k > FINAL_STEP:
        return "finished"
    return ScriptedTurn(tool_calls=[ToolCall(id=f"call-{k}", name="work", arguments={"k": k})])


def _asker_turn(request: Any) -> ScriptedTurn | str:
    if any(m.role == "tool" for m in request.messages):
        return "thanks"
    return ScriptedTurn(tool_calls=[ToolCall(id="ask-1", name="ask", arguments={"q": "colour?"})])


@tool
def work(k: int) -> ToolOutput:
    """Do step ``k`` of the job."""
    state = [
        Command.set("count", k),
        Command.set("seen", {f"s{k}": k}, merge=MergePolicy.COMMUTATIVE),
    ]
    return ToolOutput.ok(f"done {k}", state=state)


@tool
def ask(q: str) -> str:
    """Ask the user."""
    raise SuspendCall(AwaitReason.USER_INPUT, {"question": q})


def build(store: Any, *, finish: bool = False) -> Runtime:
    """The runtime both processes build (same fingerprint); ``finish`` ends worker runs."""
    worker_turns: list[Any] = ["done"] if finish else [_worker_turn]
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m-work", provider="p-work", model="scripted-1"))
        .with_model(ModelSpec(id="m-ask", provider="p-ask", model="scripted-1"))
        .with_provider("p-work", ScriptedExecutor(worker_turns, repeat=True))
        .with_provider("p-ask", ScriptedExecutor([_asker_turn], repeat=True))
        .with_tool(work)
        .with_tool(ask)
        .with_store(store)
        .with_agent_spec(
            AgentConfig(
                id="worker", model_binding="m-work", tool_ids=["work"], max_steps=FINAL_STEP
            )
        )
        .with_agent_spec(AgentConfig(id="asker", model_binding="m-ask", tool_ids=["ask"]))
        .build()
    )


async def _crash(url: str, thread_id: str) -> None:
    runtime = build(open_store(url))

    def on_event(event: Any) -> None:
        if isinstance(event, StepEnd):
            sys.stdout.write(f"step {done_steps_cache[0] + event.step}\n")
            sys.stdout.flush()

    snapshot = await runtime.store.load(ScopeBinding(thread_id, "default", "default"))
    done_steps_cache = [done_steps(snapshot.messages)]
    print("ready", flush=True)
    while True:
        try:
            await runtime.run("worker", "go", thread_id=thread_id, on_event=on_event)
            return
        except ThreadBusy:
            await asyncio.sleep(0.02)


async def _park(url: str, thread_id: str) -> None:
    runtime = build(open_store(url))
    state = await runtime.run("asker", "question please", thread_id=thread_id)
    print(state.tickets[0].model_dump_json(), flush=True)


if __name__ == "__main__":
    mode, url, tid = sys.argv[1:4]
    asyncio.run(_crash(url, tid) if mode == "crash" else _park(url, tid))
