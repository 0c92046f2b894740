"""SIGKILL a worker mid-run on the Postgres store, again and again: nothing committed is lost.

The same crash loop as ``tests/runtime/stores/test_crash.py`` (and its checks: no
duplicate message, no gap in the steps, whole steps only, state equal to the
replay of the committed log, at most the step in flight lost), with the
child's runtime on a :class:`PostgresStore`. Each child continues the thread
after the killed one's 0.3 s row lease expires.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

from awaken_runtime import ScopeBinding
from awaken_store_postgres import PostgresStore

SCRIPT = Path(__file__).with_name("pg_worker.py")
KILLS = 10


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checks = _load(
    Path(__file__).parent.parent / "runtime" / "stores" / "test_crash.py", "awaken_crash_checks"
)


async def run_until_killed(dsn: str, schema: str, thread_id: str, delay: float) -> int:
    """Start a crash child, SIGKILL it ``delay`` s after it is ready; the last step it reported."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        "crash",
        dsn,
        schema,
        thread_id,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    assert (await asyncio.wait_for(child.stdout.readline(), 60)).strip() == b"ready"
    await asyncio.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, _ = await asyncio.wait_for(child.communicate(), 30)
    assert child.returncode == -signal.SIGKILL
    steps = [int(line.split()[1]) for line in out.decode().splitlines() if line.startswith("step ")]
    return steps[-1] if steps else 0


async def settled(store: PostgresStore, thread_id: str) -> None:
    """Wait until the killed child's last commit, if the server was still running it, landed.

    A client killed right after sending COMMIT leaves the server to finish that
    transaction; the check reads the thread and its log in two queries, which
    must not straddle it.
    """
    binding = ScopeBinding(thread_id, "default", "default")
    version = (await store.load(binding)).version
    for _ in range(50):
        await asyncio.sleep(0.1)
        now = (await store.load(binding)).version
        if now == version:
            return
        version = now


async def test_sigkill_loses_at_most_the_step_in_flight(dsn: str, schema: str) -> None:
    rng = random.Random("crash-postgres")
    done = 0
    for _ in range(KILLS):
        # Past the child's start-up (the previous lease must expire first), into its steps.
        reported = await run_until_killed(dsn, schema, "crash-thread", rng.uniform(0.3, 0.8))
        async with PostgresStore(dsn, schema=schema) as store:
            await settled(store, "crash-thread")
            done = await checks._check(store, "crash-thread", reported, done)
    assert done > 0
