"""Unit tests: records, the hashing embedder, the vector index, the disk cache, the bank."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from awaken_ext_memory import (
    RECORDS_KEY,
    EmbeddingCache,
    HashingEmbedder,
    MemoryBank,
    MemoryConfig,
    MemoryOps,
    MemorySource,
    VectorIndex,
    parse_entry,
    text_digest,
)
from awaken_ext_memory._records import utcnow
from awaken_runtime import MergePolicy, Scope

KEY = (Scope.PROFILE, "alice")


def test_import_is_light() -> None:
    code = (
        "import sys, awaken_ext_memory; "
        "print(sorted(m for m in ('numpy', 'litellm', 'safetensors', 'tokenizers', 'torch') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_hashing_embedder_is_deterministic_and_normalized() -> None:
    a = HashingEmbedder(128).embed(["Hello world", "", "Prefers window seats"])
    b = HashingEmbedder(128).embed(["Hello world", "", "Prefers window seats"])
    assert a.dtype == np.float32 and a.shape == (3, 128)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a[[0, 2]], axis=1), 1.0, rtol=1e-6)
    assert not a[1].any()
    code = (
        "from awaken_ext_memory import HashingEmbedder; "
        "print(HashingEmbedder(128).embed(['Hello world'])[0][:8].tolist())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == str(a[0][:8].tolist())


def test_hashing_embedder_relates_word_forms() -> None:
    e = HashingEmbedder()
    memory, related, unrelated = e.embed(
        [
            "The user prefers window seats on flights",
            "which seat do I prefer on a flight",
            "quantum chromodynamics lecture",
        ]
    )
    assert float(memory @ related) > 0.3 > float(memory @ unrelated)
    with pytest.raises(ValueError):
        HashingEmbedder(4)


def test_index_top_k_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 32)).astype(np.float32)
    index = VectorIndex(32, capacity=4)
    ids = [f"m{i}" for i in range(500)]
    index.upsert(ids, vectors)
    query = rng.normal(size=32).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = np.argsort(-(unit @ (query / np.linalg.norm(query))))[:7]
    hits = index.search(query, 7)
    assert [h[0] for h in hits] == [ids[i] for i in expected]
    assert all(a[1] >= b[1] for a, b in itertools.pairwise(hits))
    assert index.search(query, 1000)[-1][1] <= hits[-1][1]
    assert all(score >= 0.3 for _id, score in index.search(query, 500, 0.3))


def test_index_remove_and_replace_keep_rows_consistent() -> None:
    index = VectorIndex(2)
    index.upsert(["a", "b", "c"], np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32))
    version = index.version
    assert index.remove("a") and not index.remove("a")
    assert index.version > version
    assert sorted(index.ids) == ["b", "c"] and len(index) == 2
    np.testing.assert_allclose(index.vector("c"), [2**-0.5, 2**-0.5], rtol=1e-6)
    index.upsert(["b"], np.array([[1, 0]], dtype=np.float32))
    assert index.search(np.array([1, 0], dtype=np.float32), 1)[0][0] == "b"
    assert len(index) == 2 and "b" in index and "a" not in index


def test_cache_round_trip_and_digest_check(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    cache.put_many("e1", ["m1", "m2"], [text_digest("one"), text_digest("two")], vectors)
    got = cache.get_many("e1", [("m1", text_digest("one")), ("m2", text_digest("changed"))])
    assert list(got) == ["m1"]
    np.testing.assert_array_equal(got["m1"], vectors[0])
    assert cache.get_many("e2", [("m1", text_digest("one"))]) == {}
    cache.delete("e1", ["m1"])
    assert cache.count("e1") == 1
    cache.close()
    assert EmbeddingCache(tmp_path).count() == 1


def test_parse_entry_tolerates_tombstones_and_junk() -> None:
    assert parse_entry({"id": "x", "deleted": True, "updated_at": "2025-01-01T00:00:00Z"}) is None
    assert parse_entry("nonsense") is None
    assert parse_entry({"id": "x"}) is None


class Counting:
    blocking = False

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.texts: list[str] = []
        self.id, self.dim = self.inner.id, self.inner.dim

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def commit(records: dict[str, Any], command: Any) -> dict[str, Any]:
    # What the state engine does for a COMMUTATIVE object write.
    assert command.merge is MergePolicy.COMMUTATIVE and command.key == RECORDS_KEY
    merged = dict(records)
    merged.update(command.action.value)
    return merged


async def test_bank_sync_is_incremental_and_catches_external_writes(tmp_path: Path) -> None:
    embedder = Counting()
    bank = MemoryBank(embedder, EmbeddingCache(tmp_path))
    ops = MemoryOps(bank, MemoryConfig(), utcnow)
    source = MemorySource()
    records: dict[str, Any] = {}
    for i in range(20):
        done = await ops.remember(KEY, records, f"distinct fact {i} {'x' * i}", source=source)
        records = commit(records, done.command)
    index = await bank.sync(KEY, records)
    assert len(index) == 20 and len(embedder.texts) == 20
    # Same object again: nothing to do.
    assert await bank.sync(KEY, records) is index and len(embedder.texts) == 20
    # A write by "another process" (no pending entry here) is found and embedded once.
    other = MemoryBank(HashingEmbedder(64))
    foreign = await MemoryOps(other, MemoryConfig(), utcnow).remember(
        KEY, records, "written elsewhere", source=source
    )
    records = commit(records, foreign.command)
    await bank.sync(KEY, records)
    assert len(index) == 21 and embedder.texts[-1] == "written elsewhere"
    # Forget: the tombstone drops the row without embedding anything.
    forget = ops.forget(KEY, records, foreign.record.id, source=source)
    assert forget is not None
    records = commit(records, forget)
    before = len(embedder.texts)
    await bank.sync(KEY, records)
    assert len(index) == 20 and len(embedder.texts) == before
    assert ops.forget(KEY, records, foreign.record.id, source=source) is None


async def test_bank_drops_ids_missing_from_a_different_records_value() -> None:
    bank = MemoryBank(HashingEmbedder(64))
    ops = MemoryOps(bank, MemoryConfig(), utcnow)
    records: dict[str, Any] = {}
    for text in ("alpha beta", "gamma delta"):
        done = await ops.remember(KEY, records, text, source=MemorySource())
        records = commit(records, done.command)
    index = await bank.sync(KEY, records)
    assert len(index) == 2
    other = {k: v for k, v in records.items() if v["text"] == "alpha beta"}
    for name in ("mem_x", "mem_y"):
        other[name] = {**next(iter(other.values())), "id": name, "text": f"epsilon {name}"}
    await bank.sync(KEY, other)
    assert sorted(index.ids) == sorted(other)
