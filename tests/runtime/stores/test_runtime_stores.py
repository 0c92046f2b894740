"""The runtime on persistent stores: leases, cross-process resume, store URLs."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import AwakenError, Phase, Respond, ThreadBusy
from awaken_runtime.stores import (
    FileStore,
    InMemoryStore,
    LeaseLost,
    SQLiteStore,
    default_store_url,
    hold_lease,
    open_store,
)

SCRIPT = Path(__file__).with_name("agent_script.py")
_spec = importlib.util.spec_from_file_location("awaken_agent_script_rt", SCRIPT)
assert _spec is not None and _spec.loader is not None
agent_script: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agent_script)


async def test_a_suspended_run_is_resumed_from_sqlite_in_another_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/awaken.db"
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "park", url, "t-park"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    ticket = out.strip().splitlines()[-1]
    runtime = agent_script.build(open_store(url))
    state = await runtime.resume(ticket, Respond(value="blue"))
    assert state.phase is Phase.ENDED and state.final_text == "thanks"
    store = SQLiteStore(tmp_path / "awaken.db")
    runs = await store.list_runs("t-park")
    assert [r.phase for r in runs] == [Phase.ENDED]
    snap = await store.load(agent_script.ScopeBinding("t-park", "default", "default"))
    assert snap.parked is None
    assert [m.role for m in snap.messages] == ["user", "assistant", "tool", "assistant"]
    assert snap.messages[2].text == "blue"


@pytest.mark.parametrize("kind", ["memory", "sqlite", "file"])
async def test_a_second_run_on_a_busy_thread_gets_thread_busy(kind: str, tmp_path: Path) -> None:
    store = {
        "memory": lambda: InMemoryStore(),
        "sqlite": lambda: SQLiteStore(tmp_path / "a.db"),
        "file": lambda: FileStore(tmp_path / "f"),
    }[kind]()
    lease = await store.acquire_lease("busy", "another-process", 30)
    runtime = agent_script.build(store, finish=True)
    with pytest.raises(ThreadBusy, match="another-process"):
        await runtime.run("worker", "go", thread_id="busy")
    await store.release_lease(lease)
    state = await runtime.run("worker", "go", thread_id="busy")
    assert state.phase is Phase.ENDED
    # The run released its lease.
    await store.release_lease(await store.acquire_lease("busy", "someone", 30))


async def test_an_expired_lease_does_not_lock_the_thread_forever() -> None:
    store = InMemoryStore()
    await store.acquire_lease("t", "crashed-holder", 0.05)
    await asyncio.sleep(0.1)
    runtime = agent_script.build(store, finish=True)
    assert (await runtime.run("worker", "go", thread_id="t")).phase is Phase.ENDED


async def test_hold_lease_renews_while_the_run_lasts() -> None:
    store = InMemoryStore(lease_ttl=0.15)
    async with hold_lease(store, "t", "me") as lease:
        assert lease is not None
        await asyncio.sleep(0.4)  # longer than the ttl: renewals keep it
        with pytest.raises(ThreadBusy):
            await store.acquire_lease("t", "other", 1)
    await store.release_lease(await store.acquire_lease("t", "other", 1))


async def test_a_lease_whose_renewal_swallows_the_cancel_is_still_released() -> None:
    """A driver that eats the cancel of its query (asyncio.wait_for before 3.12 can) must
    not keep the renewer alive, or the end of the run waits for it forever."""

    class Swallowing(InMemoryStore):
        renewing = asyncio.Event()

        async def renew_lease(self, lease: Any, ttl: float) -> Any:
            self.renewing.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.05)  # the cancel is lost; the renewal "succeeds"
            return await super().renew_lease(lease, ttl)

    store = Swallowing(lease_ttl=0.06)

    async def hold() -> None:
        async with hold_lease(store, "t", "me"):
            await store.renewing.wait()  # the renewer is inside renew_lease now

    await asyncio.wait_for(hold(), 5)  # never returned before the fix
    await store.release_lease(await store.acquire_lease("t", "other", 1))


async def test_a_stolen_lease_cannot_be_renewed() -> None:
    store = InMemoryStore()
    lease = await store.acquire_lease("t", "a", 0.01)
    await asyncio.sleep(0.03)
    await store.acquire_lease("t", "b", 10)
    with pytest.raises(LeaseLost):
        await store.renew_lease(lease, 10)


async def test_hold_lease_is_a_no_op_for_stores_without_leases() -> None:
    class Minimal:
        async def load(self, binding: Any) -> Any: ...
        async def commit(self, *args: Any) -> int:
            return 0

    async with hold_lease(Minimal(), "t") as lease:
        assert lease is None


def test_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(open_store("memory://"), InMemoryStore)
    sqlite = open_store(f"sqlite:///{tmp_path}/x/a.db?lease_ttl=2.5")
    assert isinstance(sqlite, SQLiteStore) and sqlite.lease_ttl == 2.5
    assert sqlite.path == f"{tmp_path}/x/a.db"
    monkeypatch.chdir(tmp_path)
    assert open_store("sqlite:///rel.db").path == "rel.db"
    files = open_store(f"file://{tmp_path}/files")
    assert isinstance(files, FileStore) and files.dir == tmp_path / "files"
    for bad in (
        "redis://x",
        "sqlite://",
        "file://",
        "memory://?colour=red",
        "memory://?lease_ttl=x",
    ):
        with pytest.raises(AwakenError):
            open_store(bad)
    monkeypatch.setenv("AWAKEN_STORE", "memory://")
    assert default_store_url() == "memory://"
    monkeypatch.delenv("AWAKEN_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_store_url() == f"sqlite:///{tmp_path}/data/awaken/awaken.db"


def test_cli_store_option_and_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from awaken_runtime.cli._main import main

    db = tmp_path / "cli.db"
    assert main(["demo", "--store", f"sqlite:///{db}", "--thread", "cli-t"]) == 0
    assert "saved in" in capsys.readouterr().err
    monkeypatch.setenv("AWAKEN_STORE", f"sqlite:///{db}")
    assert main(["demo", "--thread", "cli-t", "again?"]) == 0
    store = SQLiteStore(db)
    snap = asyncio.run(store.load(agent_script.ScopeBinding("cli-t", "default", "default")))
    assert [m.text for m in snap.messages if m.role == "user"][1] == "again?"
    monkeypatch.setenv("AWAKEN_STORE", "bogus://")
    assert main(["demo"]) == 2
    assert "unknown store URL" in capsys.readouterr().err
