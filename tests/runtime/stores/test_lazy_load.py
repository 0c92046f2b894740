"""A first load reads a thread's rows and decodes a message only when a run reads it.

Issue 19: thread load cost proportional to what a run needs. The SQLite and
file stores hand out ``StoredMessages``; a run decodes the window it sends,
once per process, and the store's commit checks (duplicate ids, tool results
answering known calls, fresh ids for a provider's repeated call ids) hold on
a thread nobody decoded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awaken_runtime import Message, ScriptedTurn, ToolCall
from awaken_runtime.stores import (
    DuplicateMessageId,
    FileStore,
    SQLiteStore,
    StoredMessages,
    UnmatchedToolResult,
)
from awaken_runtime.testing import scripted_runtime
from awaken_store_conformance import binding, tool_history

B = binding("t1")
N = 600


def _open(kind: str, root: Path) -> Any:
    return SQLiteStore(root / "a.db") if kind == "sqlite" else FileStore(root / "files")


async def _seeded(kind: str, root: Path) -> list[Message]:
    store = _open(kind, root)
    history = tool_history(N)
    version = 0
    for i in range(0, N, 50):
        version = await store.commit(B, version, history[i : i + 50], [])
    await store.close()
    return history


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_a_first_load_decodes_nothing_and_equals_the_thread(
    tmp_path: Path, kind: str
) -> None:
    history = await _seeded(kind, tmp_path)
    store = _open(kind, tmp_path)
    snap = await store.load(B)
    assert isinstance(snap.messages, StoredMessages)
    assert snap.messages.undecoded == N
    assert snap.call_ids == {f"call-{i}" for i in range(N // 3)}
    assert snap.messages == history
    await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_a_run_decodes_the_window_it_sends_once_per_process(
    tmp_path: Path, kind: str
) -> None:
    history = await _seeded(kind, tmp_path)
    store = _open(kind, tmp_path)
    seen: list[list[Message]] = []

    def answer(request: Any) -> str:
        seen.append(list(request.messages))
        return "done"

    rig = scripted_runtime([answer], store=store, context_policy={"keep_last": 10})
    state = await rig.runtime.run("agent", "next", thread_id="t1")
    assert state.end_cause.kind == "natural_end"
    assert seen[0][-10:-1] == history[-9:]  # the window: 9 stored, then the new user message
    undecoded = (await store.load(B)).messages.undecoded  # type: ignore[attr-defined]
    assert N - 128 <= undecoded < N  # about the window (decoded in one stretch), not more

    rig = scripted_runtime([answer], store=store)  # the whole thread: decoded now, once
    state = await rig.runtime.run("agent", "all of it", thread_id="t1")
    assert seen[1][: N + 1] == [*history, seen[0][-1]]
    assert (await store.load(B)).messages.undecoded == 0  # type: ignore[attr-defined]
    await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_commit_checks_hold_on_a_thread_nobody_decoded(tmp_path: Path, kind: str) -> None:
    history = await _seeded(kind, tmp_path)
    store = _open(kind, tmp_path)
    snap = await store.load(B)
    version = snap.version
    with pytest.raises(DuplicateMessageId):
        await store.commit(B, version, [Message.user("again", id=history[7].id)], [])
    with pytest.raises(UnmatchedToolResult):
        await store.commit(B, version, [Message.tool("call-unknown", "x")], [])
    # A result may answer a call stored long ago, in rows nobody decoded.
    assert await store.commit(B, version, [Message.tool("call-3", "late result")], []) == (
        version + 1
    )
    assert (await store.load(B)).messages.undecoded == N  # type: ignore[attr-defined]
    await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_a_provider_repeating_a_stored_call_id_gets_a_fresh_one(
    tmp_path: Path, kind: str
) -> None:
    await _seeded(kind, tmp_path)
    store = _open(kind, tmp_path)

    def lookup(q: int) -> str:
        """Look up."""
        return "ok"

    repeated = ToolCall(id="call-5", name="lookup", arguments={"q": 1})
    turns = [ScriptedTurn(tool_calls=[repeated]), "done"]
    rig = scripted_runtime(turns, tools=[lookup], store=store, context_policy={"keep_last": 4})
    state = await rig.runtime.run("agent", "go", thread_id="t1")
    assert state.end_cause.kind == "natural_end"
    messages = list((await store.load(B)).messages)
    calls = [c.id for m in messages if m.tool_calls for c in m.tool_calls]
    assert calls.count("call-5") == 1 and len(set(calls)) == len(calls)
    await store.close()


async def test_a_compacted_file_loads_undecoded_too(tmp_path: Path) -> None:
    history = await _seeded("file", tmp_path)
    store = FileStore(tmp_path / "files")
    store.compact("t1")
    reader = FileStore(tmp_path / "files")
    snap = await reader.load(B)
    assert snap.messages.undecoded == N  # type: ignore[attr-defined]
    assert snap.messages == history and snap.version == N // 50
    await store.close()
    await reader.close()
