"""A second process for the Postgres tests (run as a script: ``python pg_worker.py CMD ...``).

- ``race DSN SCHEMA TAG``: for each ``go N`` line on stdin, commit this writer's
  attempt at version N and print ``N won`` or ``N conflict ACTUAL``.
- ``commit DSN SCHEMA``: commit round 1 of writer ``k`` to thread ``race`` (killed mid-way by
  the test).
- ``hold DSN SCHEMA``: take a 1 s lease on thread ``crash`` and exit without releasing it.
- ``park DSN SCHEMA THREAD``: run the ``asker`` runtime of :func:`asker` until it parks on
  a question; print the ticket as JSON.
- ``crash DSN SCHEMA THREAD``: the crash child of ``tests/runtime/stores/agent_script.py`` (the
  ``worker`` agent, one ``work(k)`` step after another, ``step K`` printed after each
  checkpoint) on this store, with a 0.3 s lease, until it is killed.
- ``run DSN SCHEMA RUN_ID GATE``: run a scripted agent (step 1 calls ``noop``, step 2
  calls ``wait_gate``, which blocks until the file GATE exists, then it answers).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from awaken_runtime import (
    AwaitReason,
    Command,
    Message,
    Phase,
    Runtime,
    ScopeBinding,
    ScriptedTurn,
    SuspendCall,
    ToolCall,
    VersionConflict,
)
from awaken_runtime.testing import scripted_runtime
from awaken_store_conformance import batch, run_record
from awaken_store_postgres import PostgresStore


def attempt(tag: str, n: int) -> tuple[list[Message], list[Any], Any]:
    """What writer ``tag`` commits in round ``n``: two messages, a batch, a run record."""
    return (
        [Message.user(f"{tag}{n}-{x}", id=f"{tag}{n}-{x}") for x in "ab"],
        [batch(Command.set("last", tag), Command.set(f"only-{tag}{n}", n), revision=n + 1)],
        run_record(f"run-{tag}{n}", "race", Phase.WAITING),
    )


async def race(dsn: str, schema: str, tag: str) -> None:
    store = await PostgresStore(dsn, schema=schema).open()
    bind = ScopeBinding("race", "p", "n")
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        n = int(line.split()[1])
        messages, batches, record = attempt(tag, n)
        try:
            await store.commit(bind, n, messages, batches, record)
            print(f"{n} won", flush=True)
        except VersionConflict as exc:
            print(f"{n} conflict {exc.actual}", flush=True)
    await store.close()


async def commit(dsn: str, schema: str) -> None:
    store = await PostgresStore(dsn, schema=schema).open()
    messages, batches, record = attempt("k", 1)
    print("ready", flush=True)
    await store.commit(ScopeBinding("race", "p", "n"), 1, messages, batches, record)
    print("committed", flush=True)


def _asker_turn(request: Any) -> ScriptedTurn | str:
    if any(m.role == "tool" for m in request.messages):
        return "thanks"
    return ScriptedTurn(tool_calls=[ToolCall(id="ask-1", name="ask", arguments={"q": "colour?"})])


async def ask(q: str) -> str:
    """Ask the user."""
    raise SuspendCall(AwaitReason.USER_INPUT, {"question": q})


def asker(store: PostgresStore) -> Runtime:
    """The runtime both processes build (the same agent fingerprint): it asks, then thanks."""
    rig = scripted_runtime([_asker_turn], tools=[ask], repeat=True, store=store)  # type: ignore[arg-type]
    return rig.runtime


async def park(dsn: str, schema: str, thread_id: str) -> None:
    store = await PostgresStore(dsn, schema=schema).open()
    state = await asker(store).run("agent", "question please", thread_id=thread_id)
    print(state.tickets[0].model_dump_json(), flush=True)
    await store.close()


def agent_script() -> Any:
    """``tests/runtime/stores/agent_script.py``, the runtime the SQLite and file crash tests use."""
    import importlib.util

    path = Path(__file__).parent.parent / "runtime" / "stores" / "agent_script.py"
    spec = importlib.util.spec_from_file_location("awaken_agent_script_pg", path)
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def crash(dsn: str, schema: str, thread_id: str) -> None:
    script = agent_script()
    # Its child opens the store by URL; `open_store` knows no postgresql:// scheme.
    script.open_store = lambda _url: PostgresStore(dsn, schema=schema, lease_ttl=0.3)
    await script._crash("postgres", thread_id)


async def hold(dsn: str, schema: str) -> None:
    store = await PostgresStore(dsn, schema=schema).open()
    await store.acquire_lease("crash", "dead-worker", 1.0)
    # Exit without release: the pool's connections close with the process, the row stays.


async def run(dsn: str, schema: str, run_id: str, gate: str) -> None:
    async def noop() -> str:
        """Does nothing."""
        return "ok"

    async def wait_gate() -> str:
        """Blocks until the gate file exists."""
        while not Path(gate).exists():
            await asyncio.sleep(0.02)
        return "opened"

    store = await PostgresStore(dsn, schema=schema).open()
    rig = scripted_runtime(
        [ScriptedTurn.call("noop"), ScriptedTurn.call("wait_gate"), "all done"],
        tools=[noop, wait_gate],
        store=store,  # type: ignore[arg-type]
    )
    async for _event in rig.runtime.stream("agent", "go", thread_id="tail-t", run_id=run_id):
        pass
    await store.close()


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    asyncio.run(
        {
            "race": race,
            "commit": commit,
            "crash": crash,
            "hold": hold,
            "park": park,
            "run": run,
        }[command](*args)
    )
