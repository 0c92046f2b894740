"""``EmbeddingCache``: vectors on disk, keyed by embedder id + memory id.

Rebuilding an index after a restart reads vectors from here and embeds only
memories it lacks (or whose text changed: each row keeps a digest of the
text it was computed from). The file is a small SQLite database (stdlib
``sqlite3``, WAL mode), safe for several processes on one machine. It is a
cache: deleting it only costs re-embedding.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    import numpy as np
    from numpy.typing import NDArray

__all__ = ["EmbeddingCache", "default_cache_dir", "text_digest"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    embedder TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embedder, memory_id)
) WITHOUT ROWID
"""
_CHUNK = 500


def default_cache_dir() -> Path:
    """``$AWAKEN_MEMORY_CACHE``, else ``$XDG_CACHE_HOME/awaken/memory``, else ``~/.cache/...``."""
    explicit = os.environ.get("AWAKEN_MEMORY_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "awaken" / "memory"


def text_digest(text: str) -> str:
    """A short digest of a memory's text (detects edits of a cached memory)."""
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


class EmbeddingCache:
    """Persistent ``(embedder id, memory id) -> (text digest, vector)`` store."""

    def __init__(self, directory: str | Path) -> None:
        import sqlite3

        self.path = Path(directory) / "embeddings.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r})"

    def get_many(
        self, embedder_id: str, wanted: Iterable[tuple[str, str]]
    ) -> dict[str, NDArray[np.float32]]:
        """Cached vectors for ``(memory id, text digest)`` pairs whose digest still matches."""
        import numpy as np

        wanted_digest = dict(wanted)
        ids = list(wanted_digest)
        found: dict[str, NDArray[np.float32]] = {}
        with self._lock:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT memory_id, digest, dim, vector FROM vectors "
                    f"WHERE embedder = ? AND memory_id IN ({marks})",
                    (embedder_id, *chunk),
                ).fetchall()
                for memory_id, digest, dim, blob in rows:
                    if digest == wanted_digest[memory_id]:
                        found[memory_id] = np.frombuffer(blob, dtype=np.float32, count=dim)
        return found

    def put_many(
        self,
        embedder_id: str,
        ids: Sequence[str],
        digests: Sequence[str],
        vectors: NDArray[np.float32],
    ) -> None:
        """Store (or replace) the vectors of ``ids``."""
        import numpy as np

        block = np.asarray(vectors, dtype=np.float32)
        rows = [
            (embedder_id, mid, dig, int(block.shape[1]), block[i].tobytes())
            for i, (mid, dig) in enumerate(zip(ids, digests, strict=True))
        ]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def delete(self, embedder_id: str, ids: Sequence[str]) -> None:
        """Drop the cached vectors of forgotten memories."""
        if not ids:
            return
        with self._lock:
            self._db.executemany(
                "DELETE FROM vectors WHERE embedder = ? AND memory_id = ?",
                [(embedder_id, mid) for mid in ids],
            )

    def count(self, embedder_id: str | None = None) -> int:
        """Number of cached vectors (for one embedder, or all)."""
        with self._lock:
            if embedder_id is None:
                row = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()
            else:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM vectors WHERE embedder = ?", (embedder_id,)
                ).fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()
