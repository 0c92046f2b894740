"""The embedder protocol and helpers shared by every embedder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["Embedder", "EmbedderUnavailable", "is_blocking", "normalize_rows"]


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
    cache is keyed by it. An embedder may set ``blocking = False`` when
    ``embed`` is cheap enough to run on the event loop; otherwise the plugin
    calls it in a worker thread.
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
