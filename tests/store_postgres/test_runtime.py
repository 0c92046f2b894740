"""The runtime on the Postgres store: a run parked in one process is resumed in another."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Phase, Respond, ResumeTicket, ScopeBinding, ThreadBusy
from awaken_store_postgres import PostgresStore

SCRIPT = Path(__file__).with_name("pg_worker.py")
_spec = importlib.util.spec_from_file_location("awaken_pg_worker_rt", SCRIPT)
assert _spec is not None and _spec.loader is not None
pg_worker: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pg_worker)


async def test_a_run_parked_in_one_process_resumes_in_another(dsn: str, schema: str) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        "park",
        dsn,
        schema,
        "t-park",
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    out, _ = await asyncio.wait_for(child.communicate(), 90)
    assert child.returncode == 0
    ticket = ResumeTicket.model_validate_json(out.decode().strip().splitlines()[-1])
    async with PostgresStore(dsn, schema=schema) as store:
        listed = await store.list_threads(parked=True)
        assert [t.thread_id for t in listed] == ["t-park"]
        state = await pg_worker.asker(store).resume(ticket, Respond(value="blue"))
        assert state.phase is Phase.ENDED and state.final_text == "thanks"
        snap = await store.load(ScopeBinding("t-park", "default", "default"))
        assert snap.parked is None
        assert [m.role for m in snap.messages] == ["user", "assistant", "tool", "assistant"]
        assert snap.messages[2].text == "blue"
        assert [r.phase for r in await store.list_runs("t-park")] == [Phase.ENDED]
        assert await store.list_threads(parked=True) == []


async def test_a_thread_leased_by_another_worker_is_busy(dsn: str, schema: str) -> None:
    async with (
        PostgresStore(dsn, schema=schema) as mine,
        PostgresStore(dsn, schema=schema) as theirs,
    ):
        lease = await theirs.acquire_lease("busy", "worker-2", 30)
        runtime = pg_worker.asker(mine)
        with pytest.raises(ThreadBusy, match="worker-2"):
            await runtime.run("agent", "hi", thread_id="busy")
        await theirs.release_lease(lease)
        state = await runtime.run("agent", "hi", thread_id="busy")
        assert state.phase is Phase.WAITING  # it asked its question
        # The run gave its lease back: the other worker can take the thread.
        await theirs.release_lease(await theirs.acquire_lease("busy", "worker-2", 30))
