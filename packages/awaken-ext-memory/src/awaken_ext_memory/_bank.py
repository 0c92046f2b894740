"""``MemoryBank``: keeps one vector index per scope owner in step with state.

State (the records key) is the source of truth; indexes are derived data in
process memory. ``sync`` brings an owner's index up to date with the records
value a hook or tool sees:

* first use (or after a restart): a full build from state, taking vectors from
  the on-disk :class:`EmbeddingCache` and embedding only what it lacks;
* afterwards: O(new memories). Writes this process staged are remembered as
  *pending* together with their vectors and applied once they show up
  committed; a records value that is the same object as last time costs
  nothing. Only a change in the number of entries that no pending write
  explains (another process wrote) triggers a scan of the entries.

Search results are checked against the records value before they are
returned, so a memory that another process forgot or edited is never shown
stale.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awaken_runtime import Scope

from ._cache import EmbeddingCache, text_digest
from ._embedder import Embedder, is_blocking
from ._index import VectorIndex
from ._records import MemoryRecord, is_live, parse_entry

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["MemoryBank", "OwnerKey", "embedding_executor"]

OwnerKey = tuple[Scope, str]
"""``(scope, owner id)``: a profile id, a thread id, or a shared namespace."""

_PENDING_TTL = 3600.0
_EMBED_BATCH = 256
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def embedding_executor() -> ThreadPoolExecutor:
    """The worker threads blocking embedders run in: one per CPU, shared by every bank.

    Bounded on purpose: twenty runs injecting at once queue here instead of
    starting twenty CPU-bound threads that would starve the event loop.
    """
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=max(1, os.cpu_count() or 1), thread_name_prefix="awaken-memory-embed"
            )
        return _executor


@dataclass(slots=True)
class _Pending:
    value: Mapping[str, Any]
    vector: NDArray[np.float32] | None
    at: float = field(default_factory=time.monotonic)


@dataclass(slots=True)
class _Owner:
    index: VectorIndex
    seen: dict[str, Any] = field(default_factory=dict)
    synced: object | None = None
    built: bool = False
    pending: dict[str, _Pending] = field(default_factory=dict)


class MemoryBank:
    """Vector indexes of every scope owner for one embedder (plus its disk cache).

    ``embed_calls`` / ``embedded_texts`` count what was sent to the embedder.
    At most ``max_owners`` indexes stay in memory (least recently used are
    dropped and rebuilt from the cache when needed).
    """

    def __init__(
        self, embedder: Embedder, cache: EmbeddingCache | None = None, *, max_owners: int = 1024
    ) -> None:
        self.embedder = embedder
        self.cache = cache
        self.max_owners = max_owners
        self.embed_calls = 0
        self.embedded_texts = 0
        self._owners: OrderedDict[OwnerKey, _Owner] = OrderedDict()

    # -- embedding -------------------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` (in a worker thread unless the embedder is non-blocking)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        self.embed_calls += 1
        self.embedded_texts += len(texts)
        if is_blocking(self.embedder):
            loop = asyncio.get_running_loop()
            out = await loop.run_in_executor(embedding_executor(), self.embedder.embed, list(texts))
        else:
            out = self.embedder.embed(list(texts))
        return np.asarray(out, dtype=np.float32)

    async def _embed_many(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        parts = [
            await self.embed(texts[i : i + _EMBED_BATCH])
            for i in range(0, len(texts), _EMBED_BATCH)
        ]
        return np.concatenate(parts) if parts else await self.embed([])

    # -- owners ------------------------------------------------------------------

    def _owner(self, key: OwnerKey) -> _Owner:
        found = self._owners.get(key)
        if found is None:
            found = _Owner(VectorIndex(self.embedder.dim))
            self._owners[key] = found
            while len(self._owners) > self.max_owners:
                self._owners.popitem(last=False)
        else:
            self._owners.move_to_end(key)
        return found

    def index_of(self, key: OwnerKey) -> VectorIndex | None:
        """The in-memory index of ``key``, if one is loaded."""
        owner = self._owners.get(key)
        return owner.index if owner is not None else None

    def stage(self, key: OwnerKey, memory_id: str, value: Mapping[str, Any], vector: Any) -> None:
        """Remember a write this process staged, to index it once it is committed."""
        self._owner(key).pending[memory_id] = _Pending(value, vector)

    def pending_vectors(self, key: OwnerKey) -> list[tuple[str, Mapping[str, Any], Any]]:
        """Staged, not yet committed live writes of ``key`` that carry a vector."""
        owner = self._owners.get(key)
        if owner is None:
            return []
        return [
            (mid, p.value, p.vector)
            for mid, p in owner.pending.items()
            if p.vector is not None and is_live(p.value)
        ]

    # -- syncing ----------------------------------------------------------------

    async def sync(self, key: OwnerKey, records: Mapping[str, Any] | None) -> VectorIndex:
        """The index of ``key`` brought up to date with ``records`` (the committed value)."""
        records = records if records is not None else {}
        owner = self._owner(key)
        if owner.synced is records and owner.built:
            return owner.index
        if not owner.built:
            await self._build(owner, records)
        else:
            await self._update(owner, records)
        owner.synced = records
        return owner.index

    async def _build(self, owner: _Owner, records: Mapping[str, Any]) -> None:
        import numpy as np

        live = [(mid, data) for mid, data in records.items() if is_live(data)]
        digests = {mid: text_digest(str(data["text"])) for mid, data in live}
        vectors: dict[str, Any] = {}
        for mid, data in live:
            staged = owner.pending.get(mid)
            if staged is not None and staged.vector is not None and staged.value == data:
                vectors[mid] = staged.vector
        if self.cache is not None:
            want = ((mid, digests[mid]) for mid, _ in live if mid not in vectors)
            vectors.update(self.cache.get_many(self.embedder.id, want))
        missing = [(mid, data) for mid, data in live if mid not in vectors]
        if missing:
            fresh = await self._embed_many([str(data["text"]) for _, data in missing])
            for (mid, _), row in zip(missing, fresh, strict=True):
                vectors[mid] = row
            if self.cache is not None:
                ids = [mid for mid, _ in missing]
                self.cache.put_many(self.embedder.id, ids, [digests[m] for m in ids], fresh)
        owner.index.clear()
        if live:
            ids = [mid for mid, _ in live]
            owner.index.upsert(ids, np.stack([vectors[m] for m in ids]))
        owner.seen = dict(records)
        for mid in [m for m in owner.pending if m in records]:
            if records[mid] == owner.pending[mid].value:
                del owner.pending[mid]
        owner.built = True

    async def _update(self, owner: _Owner, records: Mapping[str, Any]) -> None:
        changed: dict[str, Any] = {}
        now = time.monotonic()
        for mid, staged in list(owner.pending.items()):
            current = records.get(mid)
            if current is not None and (current is staged.value or current == staged.value):
                changed[mid] = staged.vector
                del owner.pending[mid]
            elif now - staged.at > _PENDING_TTL:
                del owner.pending[mid]
        seen = owner.seen
        expected = len(seen) + sum(1 for mid in changed if mid not in seen)
        if len(records) != expected:
            # Someone else wrote (another process, or a different records value):
            # compare every entry, and drop ids the records no longer hold.
            for mid, value in records.items():
                old = seen.get(mid, _MISSING)
                if old is not value and old != value and mid not in changed:
                    changed[mid] = None
            for mid in seen.keys() - records.keys():
                changed[mid] = None
        await self._apply(owner, records, changed)

    async def _apply(
        self, owner: _Owner, records: Mapping[str, Any], changed: Mapping[str, Any]
    ) -> None:
        """Index ``changed`` ids (``id -> vector or None``) as ``records`` has them."""
        import numpy as np

        if not changed:
            return
        upserts: list[str] = []
        vectors: list[Any] = []
        to_embed: list[str] = []
        gone: list[str] = []
        for mid, vector in changed.items():
            value = records.get(mid)
            if mid in records:
                owner.seen[mid] = value
            else:
                owner.seen.pop(mid, None)
            if is_live(value):
                if vector is None:
                    to_embed.append(mid)
                else:
                    upserts.append(mid)
                    vectors.append(vector)
            else:
                owner.index.remove(mid)
                if value is not None:  # a tombstone: the cached vector is garbage now
                    gone.append(mid)
        if to_embed:
            fresh = await self._embed_many([str(records[m]["text"]) for m in to_embed])
            upserts.extend(to_embed)
            vectors.extend(fresh)
        if upserts:
            block = np.stack(vectors)
            owner.index.upsert(upserts, block)
            if self.cache is not None:
                digests = [text_digest(str(records[m]["text"])) for m in upserts]
                self.cache.put_many(self.embedder.id, upserts, digests, block)
        if gone and self.cache is not None:
            self.cache.delete(self.embedder.id, gone)

    # -- queries -----------------------------------------------------------------

    async def search(
        self,
        key: OwnerKey,
        records: Mapping[str, Any] | None,
        query: NDArray[np.float32],
        k: int,
        min_score: float = -1.0,
    ) -> list[tuple[MemoryRecord, float]]:
        """Top-``k`` live memories of ``key`` for a query vector, verified against state."""
        records = records if records is not None else {}
        owner = self._owner(key)
        index = await self.sync(key, records)
        for _round in range(3):
            hits = index.search(query, k, min_score)
            stale: dict[str, Any] = {}
            for mid, _score in hits:
                value = records.get(mid)
                seen = owner.seen.get(mid, _MISSING)
                if not is_live(value) or (value is not seen and value != seen):
                    stale[mid] = None
            if not stale:
                break
            await self._apply(owner, records, stale)
        out = []
        for mid, score in hits:
            record = parse_entry(records.get(mid))
            if record is not None:
                out.append((record, score))
        return out


_MISSING: Any = object()
