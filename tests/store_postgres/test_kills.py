"""Connections killed mid-commit (pg_terminate_backend, SIGKILL of the client) leave nothing.

Each test stalls a commit at a known point with a lock held by the test's
own session, finds the stalled backend through ``pg_blocking_pids`` (so a
test never touches another test's sessions), kills it, and checks that the
thread is exactly as it was before the commit began.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from awaken_runtime import Command, Message, Scope, ScopeBinding
from awaken_runtime.stores import StoreIOError
from awaken_store_conformance import batch
from awaken_store_postgres import CommitOutcomeUnknown, PostgresStore

SCRIPT = Path(__file__).with_name("pg_worker.py")
_spec = importlib.util.spec_from_file_location("awaken_pg_worker_kills", SCRIPT)
assert _spec is not None and _spec.loader is not None
pg_worker: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pg_worker)

BIND = ScopeBinding("race", "p", "n")


async def seeded(dsn: str, schema: str) -> PostgresStore:
    """A store whose thread ``race`` is at version 1 with one message and one key."""
    store = await PostgresStore(dsn, schema=schema).open()
    await store.commit(BIND, 0, [Message.user("first", id="m0")], [batch(Command.set("k", 0))])
    return store


async def blocked_by(locker: psycopg.AsyncConnection[Any]) -> int:
    """The pid of the backend waiting on a lock ``locker`` holds (polls until there is one)."""
    while True:
        cur = await locker.execute(
            "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (locker.info.backend_pid,),
        )
        row = await cur.fetchone()
        if row is not None:
            return int(row[0])
        await asyncio.sleep(0.01)


async def assert_untouched(store: PostgresStore) -> None:
    snap = await store.load(BIND)
    assert snap.version == 1 and [m.id for m in snap.messages] == ["m0"]
    assert snap.state == {(Scope.THREAD, "k"): 0}
    assert len((await store.read_batches("race")).items) == 1
    assert await store.list_runs("race") == []
    assert await store.get_run("run-k1") is None


async def test_a_backend_killed_mid_commit_leaves_nothing(dsn: str, schema: str) -> None:
    store = await seeded(dsn, schema)
    async with await psycopg.AsyncConnection.connect(dsn) as locker:
        # The commit has written its thread row, messages, batch and state when it reads `runs`.
        await locker.execute(f"LOCK TABLE {schema}.runs IN ACCESS EXCLUSIVE MODE".encode())
        messages, batches, record = pg_worker.attempt("k", 1)
        task = asyncio.create_task(store.commit(BIND, 1, messages, batches, record))
        pid = await asyncio.wait_for(blocked_by(locker), 30)
        await locker.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreIOError, match="nothing was committed"):
            await asyncio.wait_for(task, 30)
        await locker.rollback()
    await assert_untouched(store)
    # The pool replaced the dead connection: the same commit now goes through.
    assert await store.commit(BIND, 1, messages, batches, record) == 2
    assert [m.id for m in (await store.load(BIND)).messages] == ["m0", "k1-a", "k1-b"]
    await store.close()


async def test_a_backend_killed_during_commit_reports_an_unknown_outcome(
    dsn: str, schema: str
) -> None:
    store = await seeded(dsn, schema)
    key = int.from_bytes(os.urandom(4), "big")
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as locker:
        # A deferred trigger runs inside COMMIT and waits for a lock the test holds.
        await locker.execute(
            f"CREATE FUNCTION {schema}.stall() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN PERFORM pg_advisory_xact_lock({key}); RETURN NULL; END $$".encode()
        )
        await locker.execute(
            f"CREATE CONSTRAINT TRIGGER stall AFTER INSERT ON {schema}.messages "
            f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {schema}.stall()".encode()
        )
        await locker.execute("SELECT pg_advisory_lock(%s)", (key,))
        messages, batches, record = pg_worker.attempt("k", 1)
        task = asyncio.create_task(store.commit(BIND, 1, messages, batches, record))
        pid = await asyncio.wait_for(blocked_by(locker), 30)
        cur = await locker.execute("SELECT query FROM pg_stat_activity WHERE pid=%s", (pid,))
        assert (await cur.fetchone()) == ("COMMIT",)
        await locker.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(
            CommitOutcomeUnknown, match="reload thread 'race' and compare its version"
        ) as info:
            await asyncio.wait_for(task, 30)
        assert info.value.thread_id == "race"
        await locker.execute(f"DROP TRIGGER stall ON {schema}.messages".encode())
        await locker.execute("SELECT pg_advisory_unlock(%s)", (key,))
    await assert_untouched(store)  # here the server aborted it: reloading tells
    await store.close()


async def test_a_client_killed_mid_commit_leaves_nothing(dsn: str, schema: str) -> None:
    store = await seeded(dsn, schema)
    async with await psycopg.AsyncConnection.connect(dsn) as locker:
        await locker.execute(f"LOCK TABLE {schema}.runs IN ACCESS EXCLUSIVE MODE".encode())
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SCRIPT),
            "commit",
            dsn,
            schema,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert child.stdout is not None
        assert (await asyncio.wait_for(child.stdout.readline(), 60)).strip() == b"ready"
        pid = await asyncio.wait_for(blocked_by(locker), 30)
        child.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(child.wait(), 30) == -signal.SIGKILL
        await locker.rollback()  # the orphaned backend runs on, then finds its client gone
        while True:
            cur = await locker.execute("SELECT 1 FROM pg_stat_activity WHERE pid=%s", (pid,))
            if await cur.fetchone() is None:
                break
            await asyncio.sleep(0.02)
            await locker.rollback()
    await assert_untouched(store)
    await store.close()
