"""Shared fixtures for the awaken-ext-memory tests.

Modules run under ``--import-mode=importlib`` and cannot import this file, so
helpers are handed out as fixtures:

* ``counting``: ``counting(embedder=None) -> CountingEmbedder`` wrapping a
  HashingEmbedder; ``.calls`` / ``.texts`` count what was embedded.
* ``memory_rig``: ``memory_rig(turns, plugin=..., store=..., config=...,
  plugins=..., tools=...) -> Rig`` builds a discovery-free runtime with the
  memory plugin enabled on agent ``agent``; ``await rig.run(text, **kw)``.
  The embedding cache goes to the test's ``tmp_path`` unless config says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from awaken_ext_memory import HashingEmbedder, MemoryConfig, MemoryPlugin
from awaken_runtime import (
    InMemoryStore,
    RunState,
    Runtime,
    ScriptedExecutor,
)
from awaken_runtime.testing import scripted_runtime


class CountingEmbedder:
    """Wraps an embedder and counts calls and texts."""

    blocking = False

    def __init__(self, inner: Any | None = None) -> None:
        self.inner = inner or HashingEmbedder(64)
        self.calls = 0
        self.texts: list[str] = []

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.embed(texts)


@dataclass
class Rig:
    runtime: Runtime
    executor: ScriptedExecutor
    store: InMemoryStore
    plugin: MemoryPlugin
    config: dict[str, Any]

    def plugin_config(self) -> MemoryConfig:
        return MemoryConfig.model_validate(self.config)

    async def run(self, text: str, **kwargs: Any) -> RunState:
        kwargs.setdefault("thread_id", "t1")
        kwargs.setdefault("profile_id", "alice")
        return await self.runtime.run("agent", text, **kwargs)


@pytest.fixture
def counting() -> Any:
    return CountingEmbedder


@pytest.fixture
def memory_rig(tmp_path: Path) -> Any:
    def make(
        turns: Sequence[Any],
        *,
        plugin: MemoryPlugin | None = None,
        store: InMemoryStore | None = None,
        config: dict[str, Any] | None = None,
        plugins: Sequence[Any] = (),
        tools: Sequence[Any] = (),
        repeat: bool = False,
    ) -> Rig:
        plugin = plugin or MemoryPlugin(embedder=CountingEmbedder())
        cfg = {"cache_dir": str(tmp_path / "cache"), **(config or {})}
        rig = scripted_runtime(
            turns,
            tools=tools,
            plugins=[plugin, *plugins],
            store=store,
            repeat=repeat,
            instructions="You are a helpful assistant.",
            plugin_config={"memory": cfg},
        )
        return Rig(rig.runtime, rig.executor, rig.store, plugin, cfg)

    return make
