"""The defaults a plain install gets: the embedder, its calibrated threshold,
the cache file (or none), embedding off the event loop with BLAS limited, and
end-to-end recall on the project's paraphrase set."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from awaken_ext_memory import (
    HashingEmbedder,
    MemoryConfig,
    MemoryPlugin,
    MemoryWarning,
    MiniLMEmbedder,
    VectorIndex,
    blas_threads,
    default_min_score,
    minilm_available,
)
from awaken_ext_memory import _minilm as minilm_module
from awaken_runtime import ScriptedTurn
from awaken_runtime.testing import scripted_runtime

PAIRS_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "memory_pairs.json"
PAIRS: list[dict[str, str]] = json.loads(PAIRS_FILE.read_text(encoding="utf-8"))["pairs"]

needs_minilm = pytest.mark.skipif(
    not minilm_available() and not os.environ.get("CI"),  # CI installs the weights
    reason="MiniLM weights not installed (hatch run minilm)",
)


def _no_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm_module, "minilm_available", lambda: False)


# -- which embedder ---------------------------------------------------------------


@needs_minilm
def test_auto_is_minilm_when_its_weights_are_installed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning
        embedder = MemoryPlugin().embedder_for(MemoryConfig())
    assert isinstance(embedder, MiniLMEmbedder)


def test_auto_falls_back_to_hashing_and_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_minilm(monkeypatch)
    plugin = MemoryPlugin()
    with pytest.warns(MemoryWarning, match="paraphrased questions will rarely find them"):
        embedder = plugin.embedder_for(MemoryConfig())
    assert isinstance(embedder, HashingEmbedder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plugin.embedder_for(MemoryConfig(dim=128))  # a second hashing setting: no new warning
        MemoryPlugin().embedder_for(MemoryConfig(embedder="hashing"))  # asked for: silent


# -- thresholds -------------------------------------------------------------------


def _calibrate(embedder: Any) -> tuple[float, float]:
    """(offline recall@5, the largest 0.01-grid threshold losing <= 0.01 of hit@5)."""
    memories = embedder.embed([p["memory"] for p in PAIRS])
    queries = embedder.embed([p["query"] for p in PAIRS])
    memories /= np.linalg.norm(memories, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scores = queries @ memories.T
    n = len(PAIRS)
    true = scores[np.arange(n), np.arange(n)]
    in_top5 = (scores > true[:, None]).sum(axis=1) < 5
    recall = float(in_top5.mean())
    best = 0.0
    for step in range(100):
        threshold = step / 100
        if recall - float((in_top5 & (true >= threshold)).mean()) <= 0.01 + 1e-9:
            best = threshold
    return recall, best


def test_hashing_threshold_is_calibrated_on_the_paraphrase_set() -> None:
    embedder = HashingEmbedder(384)
    _recall, best = _calibrate(embedder)
    assert default_min_score(embedder) == pytest.approx(best)


@needs_minilm
def test_minilm_threshold_is_calibrated_on_the_paraphrase_set() -> None:
    embedder = MiniLMEmbedder()
    recall, best = _calibrate(embedder)
    assert default_min_score(embedder) == pytest.approx(best)
    assert recall > 0.9


def test_configured_min_score_wins() -> None:
    plugin = MemoryPlugin(embedder=HashingEmbedder(64))
    plugin.resolve(MemoryConfig(min_score=0.5))  # resolves; the ops use 0.5
    from awaken_ext_memory import MemoryOps

    ops = MemoryOps(plugin.bank_for(MemoryConfig()), MemoryConfig(min_score=0.5), plugin.clock)
    assert ops.min_score == 0.5
    default = MemoryOps(plugin.bank_for(MemoryConfig()), MemoryConfig(), plugin.clock)
    assert default.min_score == HashingEmbedder.default_min_score


# -- the cache file ---------------------------------------------------------------


async def _remember_once(plugin: MemoryPlugin, config: dict[str, Any]) -> None:
    rig = scripted_runtime(
        [ScriptedTurn.call("remember", {"text": "The user's cat is called Miso"}), "Noted."],
        plugins=[plugin],
        plugin_config={"memory": config},
    )
    state = await rig.runtime.run("agent", "my cat is Miso", profile_id="alice")
    assert state.end_cause is not None and state.end_cause.kind == "natural_end"


async def test_hashing_writes_no_cache_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWAKEN_MEMORY_CACHE", str(tmp_path / "env-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    await _remember_once(MemoryPlugin(), {"embedder": "hashing"})
    _no_minilm(monkeypatch)
    with pytest.warns(MemoryWarning):
        await _remember_once(MemoryPlugin(), {})  # auto -> hashing
    assert not any(tmp_path.rglob("*.sqlite3*"))


@needs_minilm
async def test_minilm_cache_goes_where_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWAKEN_MEMORY_CACHE", str(tmp_path / "env-cache"))
    await _remember_once(MemoryPlugin(), {})
    assert (tmp_path / "env-cache" / "embeddings.sqlite3").is_file()
    await _remember_once(MemoryPlugin(), {"cache_dir": str(tmp_path / "mine")})
    assert (tmp_path / "mine" / "embeddings.sqlite3").is_file()
    await _remember_once(MemoryPlugin(), {"cache": False, "cache_dir": str(tmp_path / "off")})
    assert not (tmp_path / "off").exists()


# -- off the event loop, BLAS limited ------------------------------------------------


def _blas_threads_now() -> list[int]:
    from threadpoolctl import threadpool_info

    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_blas_limit_is_reference_counted_across_overlapping_calls() -> None:
    pytest.importorskip("threadpoolctl")
    np.ones((4, 4)) @ np.ones((4, 4))  # make sure BLAS is loaded
    before = _blas_threads_now()
    inside = threading.Event()
    release = threading.Event()
    seen: list[list[int]] = []

    def worker() -> None:
        with blas_threads(1):
            inside.set()
            release.wait(5)
            seen.append(_blas_threads_now())

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(5)
    with blas_threads(1):
        seen.append(_blas_threads_now())
    # The first caller left while the worker is still inside: the limit holds.
    seen.append(_blas_threads_now())
    release.set()
    thread.join(5)
    assert all(threads == [1] * len(before) for threads in seen)
    assert _blas_threads_now() == before  # restored once the last one left


@needs_minilm
async def test_minilm_embeds_off_the_event_loop_with_one_blas_thread() -> None:
    pytest.importorskip("threadpoolctl")
    where: list[tuple[str, list[int]]] = []

    class Spy(MiniLMEmbedder):
        def _forward(self, *args: Any) -> Any:
            where.append((threading.current_thread().name, _blas_threads_now()))
            return super()._forward(*args)

    plugin = MemoryPlugin(embedder=Spy())
    bank = plugin.bank_for(MemoryConfig(cache=False))
    loop_thread = threading.current_thread().name
    vectors = await asyncio.gather(*(bank.embed([f"query {i}"]) for i in range(6)))
    assert all(v.shape == (1, 384) for v in vectors)
    assert len(where) == 6
    assert all(name != loop_thread and name.startswith("awaken-memory-embed") for name, _ in where)
    assert all(set(threads) == {1} for _name, threads in where)


# -- end to end on the paraphrase set ---------------------------------------------------


@needs_minilm
async def test_default_memory_reaches_its_offline_recall_end_to_end(tmp_path: Path) -> None:
    plugin = MemoryPlugin()  # every default: auto embedder, calibrated min_score, top 5
    calls = [
        ScriptedTurn.call("remember", {"text": p["memory"]})
        .tool_calls[0]
        .model_copy(update={"id": f"call_{i}"})
        for i, p in enumerate(PAIRS)
    ]
    rig = scripted_runtime(
        [ScriptedTurn(tool_calls=calls), "Stored.", *["ok"] * len(PAIRS)],
        plugins=[plugin],
        plugin_config={"memory": {"cache_dir": str(tmp_path)}},
    )
    seed = await rig.runtime.run("agent", "Remember all of this.", profile_id="alice")
    assert seed.end_cause is not None and seed.end_cause.kind == "natural_end"
    hits = 0
    for i, pair in enumerate(PAIRS):
        first = len(rig.executor.requests)
        await rig.runtime.run("agent", pair["query"], thread_id=f"q{i}", profile_id="alice")
        injected = "\n".join(
            m.text for m in rig.executor.requests[first].messages if "[mem_" in m.text
        )
        hits += pair["memory"] in injected
    end_to_end = hits / len(PAIRS)

    embedder = MiniLMEmbedder()
    index = VectorIndex(embedder.dim)
    index.upsert([str(i) for i in range(len(PAIRS))], embedder.embed([p["memory"] for p in PAIRS]))
    queries = embedder.embed([p["query"] for p in PAIRS])
    offline = sum(
        str(i) in {mid for mid, _ in index.search(queries[i], 5)} for i in range(len(PAIRS))
    ) / len(PAIRS)
    assert end_to_end >= offline - 0.03, (end_to_end, offline)
    assert end_to_end > 0.9
