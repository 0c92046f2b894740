"""Memories outlive the process: two OS processes over one SQLite store.

A child process remembers through a scripted run and exits; this process then
opens the same SQLite file and the same embedding cache, recalls the memory
in a new thread, and embeds nothing but the query (the cache supplies the
memory's vector).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from awaken_ext_memory import HashingEmbedder, MemoryPlugin
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    NaturalEnd,
    ScriptedExecutor,
    ScriptedTurn,
)

stores = pytest.importorskip(
    "awaken_runtime.stores", reason="the runtime has no persistent store backend yet"
)

FACT = "My daughter's birthday is on the 14th of March"

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from awaken_runtime import AgentConfig, AgentRuntimeBuilder, ModelSpec
    from awaken_runtime import ScriptedExecutor, ScriptedTurn
    from awaken_runtime.stores import open_store
    from awaken_ext_memory import HashingEmbedder, MemoryPlugin

    db, cache, fact = sys.argv[1:4]


    class Cached(HashingEmbedder):
        cacheable = True  # hashing keeps no cache by default; this test is about the cache

    async def main() -> None:
        store = open_store("sqlite:///" + db)
        runtime = (
            AgentRuntimeBuilder(discover=False)
            .with_model(ModelSpec(id="m", provider="scripted", model="s"))
            .with_provider("scripted", ScriptedExecutor(
                [ScriptedTurn.call("remember", {"text": fact, "kind": "event"}), "Noted."]))
            .with_plugin(MemoryPlugin(embedder=Cached(64)))
            .with_store(store)
            .with_agent_spec(AgentConfig(id="agent", model_binding="m", plugin_ids=["memory"],
                                         plugin_config={"memory": {"cache_dir": cache}}))
            .build()
        )
        state = await runtime.run("agent", "remember the birthday", thread_id="t1",
                                  profile_id="alice")
        print(state.end_cause.kind)
        await store.close()

    asyncio.run(main())
    """
)


class Counting:
    blocking = False

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.id, self.dim = self.inner.id, self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


async def test_memories_persist_across_processes_with_sqlite(tmp_path: Path) -> None:
    db, cache = tmp_path / "awaken.db", tmp_path / "cache"
    child = subprocess.run(
        [sys.executable, "-c", WRITER, str(db), str(cache), FACT],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert "natural" in child.stdout, child.stdout

    store = stores.open_store("sqlite:///" + str(db))
    embedder = Counting()
    executor = ScriptedExecutor(
        [ScriptedTurn.call("recall", {"query": "birthday 14th of March"}), "The 14th."]
    )
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_model(ModelSpec(id="m", provider="scripted", model="s"))
        .with_provider("scripted", executor)
        .with_plugin(MemoryPlugin(embedder=embedder))
        .with_store(store)
        .with_agent_spec(
            AgentConfig(
                id="agent",
                model_binding="m",
                plugin_ids=["memory"],
                plugin_config={"memory": {"cache_dir": str(cache)}},
            )
        )
        .build()
    )
    question = "When is my daughter's birthday?"
    state = await runtime.run("agent", question, thread_id="t2", profile_id="alice")
    await store.close()
    assert isinstance(state.end_cause, NaturalEnd)
    recalled = json.loads(next(m.text for m in state.new_messages if m.role == "tool"))
    assert recalled[0]["text"] == FACT and recalled[0]["kind"] == "event"
    # The memory's vector came from the disk cache: only the two queries were embedded.
    assert embedder.texts == [question, "birthday 14th of March"]
    assert any(FACT in m.text for m in executor.requests[0].messages if m.role == "system")
