"""The embedder protocol and helpers shared by every embedder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "UNCALIBRATED_MIN_SCORE",
    "Embedder",
    "EmbedderUnavailable",
    "default_min_score",
    "is_blocking",
    "needs_cache",
    "normalize_rows",
]

UNCALIBRATED_MIN_SCORE = 0.25
"""``min_score`` for an embedder that states no calibrated one (``default_min_score``)."""


class EmbedderUnavailable(RuntimeError):
    """An embedder cannot be built here: a package or its weight files are missing.

    The message says what to install or which path to pass.
    """


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors.

    ``embed`` returns a ``float32`` array of shape ``(len(texts), dim)``; rows
    need not be normalized (the index normalizes). ``id`` names the model and
    its settings: vectors of different ids are never mixed, and the on-disk
    cache is keyed by it. Optional attributes: ``blocking = False`` when
    ``embed`` is cheap enough to run on the event loop (otherwise the plugin
    calls it in a worker thread); ``cacheable = False`` when recomputing a
    vector is as cheap as reading it back (no disk cache is then kept);
    ``default_min_score``, the cosine threshold calibrated for it (see
    :func:`default_min_score`).
    """

    @property
    def id(self) -> str:
        """Stable identifier of the model and settings (cache key)."""
        ...

    @property
    def dim(self) -> int:
        """Length of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` into a ``(len(texts), dim)`` float32 array."""
        ...


def is_blocking(embedder: Any) -> bool:
    """Whether ``embedder.embed`` should run in a worker thread (default: yes)."""
    return bool(getattr(embedder, "blocking", True))


def needs_cache(embedder: Any) -> bool:
    """Whether vectors of ``embedder`` are worth a disk cache (default: yes)."""
    return bool(getattr(embedder, "cacheable", True))


def default_min_score(embedder: Any) -> float:
    """The embedder's calibrated ``min_score``, else :data:`UNCALIBRATED_MIN_SCORE`."""
    value = getattr(embedder, "default_min_score", None)
    return float(value) if value is not None else UNCALIBRATED_MIN_SCORE


def normalize_rows(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix`` with every row scaled to unit length (zero rows stay zero)."""
    import numpy as np

    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim == 1:
        out = out.reshape(1, -1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    result: NDArray[np.float32] = (out / norms).astype(np.float32, copy=False)
    return result
