"""Racing writers and racing lease holders, in one process and in two."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from awaken_runtime import Scope, ScopeBinding, ThreadBusy, VersionConflict
from awaken_store_postgres import PostgresStore

SCRIPT = Path(__file__).with_name("pg_worker.py")
_spec = importlib.util.spec_from_file_location("awaken_pg_worker", SCRIPT)
assert _spec is not None and _spec.loader is not None
pg_worker: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pg_worker)
attempt = pg_worker.attempt


async def worker(*args: str) -> asyncio.subprocess.Process:
    """Start ``pg_worker.py`` with ``args`` (stdin and stdout piped)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


async def test_two_writers_on_one_version_exactly_one_wins(dsn: str, schema: str) -> None:
    # Two stores = two pools = two server sessions, as two workers would be.
    a, b = PostgresStore(dsn, schema=schema), PostgresStore(dsn, schema=schema)
    bind = ScopeBinding("race", "p", "n")
    winners: list[str] = []
    for n in range(25):

        async def write(store: PostgresStore, tag: str, n: int = n) -> str | None:
            messages, batches, record = attempt(tag, n)
            try:
                await store.commit(bind, n, messages, batches, record)
            except VersionConflict as exc:
                assert (exc.thread_id, exc.expected, exc.actual) == ("race", n, n + 1)
                return None
            return tag

        results = await asyncio.gather(write(a, "a"), write(b, "b"))
        won = [r for r in results if r is not None]
        assert len(won) == 1, results
        winners.append(won[0])
    snap = await a.load(bind)
    assert snap.version == 25
    expected = [f"{w}{n}-{x}" for n, w in enumerate(winners) for x in "ab"]
    assert [m.id for m in snap.messages] == expected
    # Nothing of a losing batch is stored: no state key, no batch, no run record.
    keys = {k for (_s, k) in snap.state}
    assert keys == {"last"} | {f"only-{w}{n}" for n, w in enumerate(winners)}
    assert snap.state[(Scope.THREAD, "last")] == winners[-1]
    assert len((await a.read_batches("race", limit=100)).items) == 25
    runs = [r.run_id for r in await a.list_runs("race")]
    assert runs == [f"run-{w}{n}" for n, w in enumerate(winners)]
    for n, w in enumerate(winners):
        loser = "b" if w == "a" else "a"
        assert await a.get_run(f"run-{loser}{n}") is None
    await a.close()
    await b.close()


async def test_two_processes_racing_on_one_version(dsn: str, schema: str) -> None:
    await (await PostgresStore(dsn, schema=schema).open()).close()
    procs = [await worker("race", dsn, schema, tag) for tag in "xy"]
    for p in procs:
        assert p.stdout is not None
        assert (await asyncio.wait_for(p.stdout.readline(), 60)).strip() == b"ready"
    rounds, winners = 15, []
    for n in range(rounds):
        for p in procs:  # both writers are told at once and commit at version n
            assert p.stdin is not None
            p.stdin.write(f"go {n}\n".encode())
        await asyncio.gather(*(p.stdin.drain() for p in procs if p.stdin is not None))
        lines = [
            (await asyncio.wait_for(p.stdout.readline(), 60)).decode().split()
            for p in procs
            if p.stdout is not None
        ]
        outcomes = sorted(line[1:] for line in lines)
        assert outcomes == [["conflict", str(n + 1)], ["won"]], (n, lines)
        winners.append("xy"[[line[1] for line in lines].index("won")])
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
        assert await asyncio.wait_for(p.wait(), 60) == 0
    async with PostgresStore(dsn, schema=schema) as store:
        snap = await store.load(ScopeBinding("race", "p", "n"))
        assert snap.version == rounds
        assert [m.id for m in snap.messages] == [
            f"{winners[n]}{n}-{x}" for n in range(rounds) for x in "ab"
        ]
        assert len((await store.read_batches("race", limit=100)).items) == rounds
        runs = [r.run_id for r in await store.list_runs("race")]
        assert runs == [f"run-{w}{n}" for n, w in enumerate(winners)]


async def test_racing_lease_holders_exactly_one_gets_the_thread(dsn: str, schema: str) -> None:
    stores = [await PostgresStore(dsn, schema=schema).open() for _ in range(6)]

    async def grab(i: int) -> Any:
        try:
            return await stores[i].acquire_lease("hot", f"h{i}", 30)
        except ThreadBusy:
            return None

    leases = [x for x in await asyncio.gather(*(grab(i) for i in range(6))) if x is not None]
    assert len(leases) == 1
    await stores[0].release_lease(leases[0])
    assert (await stores[1].acquire_lease("hot", "h1", 30)).holder == "h1"
    for s in stores:
        await s.close()


async def test_a_lease_outlives_its_holders_connections_until_it_expires(
    dsn: str, schema: str
) -> None:
    async with PostgresStore(dsn, schema=schema) as store:
        p = await worker("hold", dsn, schema)
        assert await asyncio.wait_for(p.wait(), 60) == 0
        with pytest.raises(ThreadBusy, match="dead-worker"):
            await store.acquire_lease("crash", "survivor", 10)
        with psycopg.connect(dsn) as conn:
            rows = conn.execute(f"SELECT holder FROM {schema}.leases".encode()).fetchall()
        assert rows == [("dead-worker",)]
        await asyncio.sleep(1.2)  # the dead holder's ttl
        lease = await store.acquire_lease("crash", "survivor", 10)
        assert lease.holder == "survivor"
