"""``HashingEmbedder``: deterministic, offline feature-hashing embeddings.

No model, no downloads, no state: the same text gives the same vector in
every process (hashes come from ``blake2b``, not Python's salted ``hash``).
Features are content words, word bigrams and character n-grams of each word
(so "prefer" and "preferences" share features), signed-hashed into ``dim``
buckets. It captures lexical overlap, not meaning: a paraphrase with
different words scores low. It is the fallback when the MiniLM weights are
not installed (it needs nothing); pick MiniLM or a LiteLLM embedder for
semantic recall (see the README).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
# fmt: off
_STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
        "does", "for", "from", "had", "has", "have", "he", "her", "hers", "him", "his", "how", "i",
        "if", "in", "into", "is", "it", "its", "just", "me", "my", "myself", "of", "on", "or",
        "our", "ours", "she", "so", "some", "than", "that", "the", "their", "theirs", "them",
        "then", "there", "these", "they", "this", "those", "to", "too", "us", "was", "we", "were",
        "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you",
        "your", "yours", "i'm", "it's", "don't",
    }
)
# fmt: on


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ers", "ed", "es", "er", "ly", "s")


def _stem(word: str) -> str:
    """A crude suffix-stripping stem ("flights" -> "flight", "prefers" -> "prefer")."""
    for suffix in _SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _hash(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")


class HashingEmbedder:
    """Feature-hashing embedder (the fallback default; offline and deterministic).

    ``dim`` buckets (default 384); ``ngram`` is the character n-gram length
    (default 4, ``0`` turns character features off); ``bigrams`` adds word
    bigram features.
    """

    blocking = False
    """Cheap enough to run on the event loop."""
    cacheable = False
    """Recomputing a vector is as cheap as reading it back: no disk cache."""
    default_min_score = 0.09
    """Calibrated on ``benchmarks/data/memory_pairs.json`` (dim 384, default
    features): the largest threshold that loses at most 0.01 of hit@5
    against no threshold (``python benchmarks/memory.py`` prints the table)."""

    def __init__(self, dim: int = 384, *, ngram: int = 4, bigrams: bool = True) -> None:
        if dim < 8:
            raise ValueError(f"HashingEmbedder dim must be >= 8, got {dim}")
        if ngram < 0:
            raise ValueError(f"HashingEmbedder ngram must be >= 0, got {ngram}")
        self._dim = dim
        self._ngram = ngram
        self._bigrams = bigrams
        self._word_features = lru_cache(maxsize=100_000)(self._features_of_word)

    @property
    def id(self) -> str:
        """``hashing-v1:<dim>:<ngram>[:b]``."""
        return f"hashing-v1:{self._dim}:{self._ngram}{':b' if self._bigrams else ''}"

    @property
    def dim(self) -> int:
        """Number of hash buckets."""
        return self._dim

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim}, ngram={self._ngram}, bigrams={self._bigrams})"

    def _bucket(self, feature: str, weight: float) -> tuple[int, float]:
        h = _hash(feature)
        return h % self._dim, weight if (h >> 63) & 1 else -weight

    def _features_of_word(self, word: str) -> tuple[tuple[int, float], ...]:
        stem = _stem(word)
        out = [self._bucket("w:" + word, 0.5), self._bucket("s:" + stem, 1.0)]
        n = self._ngram
        if n and len(word) >= 3:
            padded = f"<{stem}>"
            grams = [padded[i : i + n] for i in range(max(1, len(padded) - n + 1))]
            share = 1.0 / len(grams)
            out.extend(self._bucket("c:" + g, share) for g in grams)
        return tuple(out)

    def _row(self, text: str) -> tuple[list[int], list[float]]:
        normalized = unicodedata.normalize("NFKC", text).lower()
        words = [w for w in _WORD.findall(normalized) if w not in _STOPWORDS]
        idx: list[int] = []
        val: list[float] = []
        for word in words:
            for i, v in self._word_features(word):
                idx.append(i)
                val.append(v)
        if self._bigrams:
            for left, right in itertools.pairwise(words):
                i, v = self._bucket(f"b:{left} {right}", 0.5)
                idx.append(i)
                val.append(v)
        return idx, val

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: one unit-length row per text (a text with no words is zero)."""
        import numpy as np

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for r, text in enumerate(texts):
            idx, val = self._row(text)
            if idx:
                out[r] = np.bincount(idx, weights=val, minlength=self._dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0.0] = 1.0
        out /= norms
        return out
