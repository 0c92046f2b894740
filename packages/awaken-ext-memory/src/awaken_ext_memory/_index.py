"""``VectorIndex``: a dense float32 matrix of unit vectors with top-k search.

Rows live in one preallocated matrix that grows by doubling, so adding a
memory is amortized O(dim). Removal swaps the last row into the hole (O(dim)),
keeping the matrix dense: a search is one matrix-vector product over the used
rows and an ``argpartition`` for the top k, with no Python loop over memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["VectorIndex"]


class VectorIndex:
    """Vectors keyed by id; cosine top-k by a single matrix product.

    Vectors are normalized on the way in, so a score is the cosine
    similarity. ``version`` increases on every change (callers cache results
    against it).
    """

    __slots__ = ("_ids", "_matrix", "_rows", "dim", "version")

    def __init__(self, dim: int, capacity: int = 64) -> None:
        import numpy as np

        self.dim = dim
        self._matrix: NDArray[np.float32] = np.zeros((max(capacity, 1), dim), dtype=np.float32)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self.version = 0

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._rows

    @property
    def ids(self) -> Sequence[str]:
        """Ids in row order (read-only view; do not mutate)."""
        return self._ids

    def vector(self, memory_id: str) -> NDArray[np.float32]:
        """A copy of the stored unit vector of ``memory_id``."""
        row: NDArray[np.float32] = self._matrix[self._rows[memory_id]].copy()
        return row

    def _reserve(self, extra: int) -> None:
        import numpy as np

        need = len(self._ids) + extra
        if need <= self._matrix.shape[0]:
            return
        capacity = max(need, self._matrix.shape[0] * 2)
        grown = np.zeros((capacity, self.dim), dtype=np.float32)
        grown[: len(self._ids)] = self._matrix[: len(self._ids)]
        self._matrix = grown

    def upsert(self, ids: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Add or replace the vectors of ``ids`` (one row of ``vectors`` each)."""
        import numpy as np

        if not ids:
            return
        block = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        norms[norms == 0.0] = 1.0
        block = block / norms
        self._reserve(len(ids))
        for memory_id, row in zip(ids, block, strict=True):
            at = self._rows.get(memory_id)
            if at is None:
                at = len(self._ids)
                self._ids.append(memory_id)
                self._rows[memory_id] = at
            self._matrix[at] = row
        self.version += 1

    def remove(self, memory_id: str) -> bool:
        """Drop ``memory_id``; ``False`` if it was not indexed."""
        at = self._rows.pop(memory_id, None)
        if at is None:
            return False
        last = len(self._ids) - 1
        if at != last:
            moved = self._ids[last]
            self._matrix[at] = self._matrix[last]
            self._ids[at] = moved
            self._rows[moved] = at
        self._ids.pop()
        self._matrix[last] = 0.0
        self.version += 1
        return True

    def clear(self) -> None:
        """Remove everything."""
        self._ids.clear()
        self._rows.clear()
        self._matrix[:] = 0.0
        self.version += 1

    def scores(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        """Cosine similarity of every indexed vector to ``query`` (in row order)."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm > 0.0:
            q = q / norm
        result: NDArray[np.float32] = np.asarray(self._matrix[: len(self._ids)] @ q)
        return result

    def search(
        self, query: NDArray[np.float32], k: int, min_score: float = -1.0
    ) -> list[tuple[str, float]]:
        """The ``k`` best ``(id, cosine)`` pairs at or above ``min_score``, best first."""
        import numpy as np

        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        scores = self.scores(query)
        top = np.argpartition(scores, n - k)[n - k :] if k < n else np.arange(n)
        top = top[np.argsort(scores[top])[::-1]]
        return [(self._ids[i], float(scores[i])) for i in top if scores[i] >= min_score]
