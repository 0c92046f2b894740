"""Helper for ``test_racing_resumes.py``: the agent, a port-only store, and a resumer process.

    python race_proc.py park   DB_FILE OUT_FILE
    python race_proc.py run-hang DB_FILE EXEC_FILE TTL
    python race_proc.py crash-resume STORE_URL TICKET_FILE EXEC_FILE
    python race_proc.py resume DB_FILE OUT_FILE TICKET_FILE GO_FILE EXEC_FILE [port-only] [hang]
        [ttl:SECONDS] [STALE]

``park`` runs the agent over the SQLite store at ``DB_FILE`` until its one
``transfer`` call parks and writes the ticket to ``OUT_FILE``. ``resume``
waits for ``GO_FILE`` to exist (so two processes start together), approves the
ticket and writes what happened to ``OUT_FILE``. The ``transfer`` tool appends
a line to ``EXEC_FILE`` each time its body runs: the count of executions.
``port-only`` hides the store's lease behind a store with only ``load`` and
``commit``; ``STALE`` (seconds) makes this process's first load slow: it
returns what it read, after that long (a slow replica, a paused process).
``hang`` blocks inside the tool after recording the execution (to be killed
there); ``ttl:SECONDS`` sets the store's lease ttl. ``run-hang`` runs the agent
without the gate and blocks the same way inside the tool.

The test module loads this file too (``build_runtime``, ``PortOnlyStore``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    Approve,
    AwaitReason,
    CapabilityBound,
    Contributions,
    ModelSpec,
    PluginManifest,
    ResumeRejected,
    Runtime,
    ScopeBinding,
    ScriptedExecutor,
    ScriptedTurn,
    Suspend,
    ThreadBusy,
    ToolCall,
    ToolCallContext,
    tool,
)
from awaken_runtime.stores import SQLiteStore, open_store

AGENT = "payer"
THREAD = "t-race"


class ApprovalGate:
    """Suspends every ``transfer`` call for the user's permission."""

    manifest = PluginManifest(id="approval", bound=CapabilityBound(tool_gates=True))

    def resolve(self, config: Any) -> Contributions:
        def gate(ctx: Any, call: ToolCall) -> Any:
            if call.name == "transfer":
                return Suspend(await_reason=AwaitReason.TOOL_PERMISSION)
            return None

        return Contributions(tool_gates=[gate])


def build_runtime(
    store: Any, executed: Callable[[str], None], turns: Sequence[Any], *, gate: bool = True
) -> Runtime:
    """The paying agent over ``store``; ``executed(call_id)`` runs in the tool's body.

    Without ``gate`` the agent's calls run at once instead of parking.
    """

    @tool
    async def transfer(amount: int, ctx: ToolCallContext) -> str:
        """Move money."""
        executed(ctx.call_id)
        return f"moved {amount}"

    plugins = ["approval"] if gate else []
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="scripted", model="scripted-1"))
        .with_provider("scripted", ScriptedExecutor(list(turns)))
        .with_store(store)
        .with_tool(transfer)
        .with_plugin(ApprovalGate())
        .with_agent_spec(
            AgentConfig(id=AGENT, model_binding="m", tool_ids=["transfer"], plugin_ids=plugins)
        )
        .build()
    )


PARK_TURNS = [
    ScriptedTurn(tool_calls=[ToolCall(id="pay", name="transfer", arguments={"amount": 5})])
]
RESUME_TURNS = ["paid"]


class PortOnlyStore:
    """Only the thread-store port (``load``, ``commit``): no lease, whatever ``inner`` has.

    ``stale_loads`` lists, per load in order, how long that load holds what it
    read before returning it (seconds; a negative number yields to the event
    loop that many times instead); loads past the list return at once.
    """

    def __init__(self, inner: Any, stale_loads: Sequence[float] = ()) -> None:
        self.inner = inner
        self.stale = list(stale_loads)
        self.loads = 0

    async def load(self, binding: ScopeBinding) -> Any:
        snapshot = await self.inner.load(binding)
        delay = self.stale[self.loads] if self.loads < len(self.stale) else 0.0
        self.loads += 1
        if delay < 0:
            for _ in range(int(-delay)):
                await asyncio.sleep(0)
        elif delay > 0:
            await asyncio.sleep(delay)
        return snapshot

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        return int(await self.inner.commit(*args, **kwargs))


def _park(db: Path, out: Path) -> None:
    runtime = build_runtime(SQLiteStore(db), lambda _id: None, PARK_TURNS)
    state = asyncio.run(runtime.run(AGENT, "pay 5", thread_id=THREAD))
    (ticket,) = state.tickets
    out.write_text(ticket.model_dump_json())


def _resume(
    db: Path, out: Path, ticket_file: Path, go: Path, exec_file: Path, rest: list[str]
) -> None:
    port_only = "port-only" in rest
    hang = "hang" in rest
    ttl = [float(a[4:]) for a in rest if a.startswith("ttl:")]
    stale = [float(a) for a in rest if a not in ("port-only", "hang") and not a.startswith("ttl:")]

    def executed(call_id: str) -> None:
        with exec_file.open("a") as f:
            f.write(f"{os.getpid()} {call_id}\n")
        if hang:  # the test SIGKILLs this process here: after the claim, before the result
            time.sleep(3600)

    store: Any = SQLiteStore(db, lease_ttl=ttl[0]) if ttl else SQLiteStore(db)
    if port_only:
        store = PortOnlyStore(store, stale)
    runtime = build_runtime(store, executed, RESUME_TURNS)
    ticket = ticket_file.read_text()
    while not go.exists():
        time.sleep(0.005)
    try:
        state = asyncio.run(runtime.resume(ticket, Approve()))
        report: dict[str, Any] = {"phase": state.phase.value}
    except (ResumeRejected, ThreadBusy) as exc:
        report = {"rejected": type(exc).__name__, "reason": str(exc)}
    out.write_text(json.dumps(report))


def _run_and_hang(db: Path, exec_file: Path, ttl: float) -> None:
    """Run without the gate; the tool records its execution, then blocks (to be killed)."""

    def executed(call_id: str) -> None:
        with exec_file.open("a") as f:
            f.write(f"{os.getpid()} {call_id}\n")
        time.sleep(3600)

    runtime = build_runtime(SQLiteStore(db, lease_ttl=ttl), executed, PARK_TURNS, gate=False)
    asyncio.run(runtime.run(AGENT, "pay 5", thread_id=THREAD))


def _crash_resume(url: str, ticket_file: Path, exec_file: Path) -> None:
    """Resume over ``open_store(url)``; print ``ready`` first (the test kills us at will).

    The tool sleeps a little after recording its execution, so kills land before
    the claim, between the claim and the result, and after it.
    """

    def executed(call_id: str) -> None:
        with exec_file.open("a") as f:
            f.write(f"{os.getpid()} {call_id}\n")
        time.sleep(0.02)

    runtime = build_runtime(open_store(url), executed, RESUME_TURNS)
    ticket = ticket_file.read_text()
    print("ready", flush=True)
    asyncio.run(runtime.resume(ticket, Approve()))


def main(argv: list[str]) -> None:
    mode, db, out, *rest = argv
    if mode == "crash-resume":
        _crash_resume(db, Path(out), Path(rest[0]))
    elif mode == "park":
        _park(Path(db), Path(out))
    elif mode == "run-hang":
        _run_and_hang(Path(db), Path(out), float(rest[0]))
    else:
        ticket_file, go, exec_file, *flags = rest
        _resume(Path(db), Path(out), Path(ticket_file), Path(go), Path(exec_file), flags)


if __name__ == "__main__":
    main(sys.argv[1:])
