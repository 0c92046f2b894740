"""``MemoryOps``: remember, forget, recall and render, shared by tools and hooks.

Every operation reads the committed records value it is given and returns
the command to stage; nothing here writes state. Writes are also announced
to the :class:`MemoryBank` so the index picks them up, without re-embedding,
once the loop commits them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from awaken_runtime import Command

from ._bank import MemoryBank, OwnerKey
from ._config import MemoryConfig
from ._embedder import default_min_score
from ._records import (
    MemoryRecord,
    MemorySource,
    Tombstone,
    is_live,
    new_memory_id,
    parse_entry,
    records_command,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["MemoryOps", "Remembered", "render_memories"]


@dataclass(frozen=True, slots=True)
class Remembered:
    """Outcome of :meth:`MemoryOps.remember`: the record, its command, and whether it merged."""

    record: MemoryRecord
    command: Command
    merged_into_existing: bool
    similarity: float | None = None


def _clean_tags(tags: Sequence[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for tag in tags or ():
        tag = tag.strip()
        if tag and tag not in out:
            out.append(tag)
    return tuple(out)


def render_memories(hits: Sequence[tuple[MemoryRecord, float]], *, with_tools: bool) -> str:
    """The injected text: one line per memory with id, date, kind, tags and text."""
    if not hits:
        return ""
    lines = [
        "Long-term memories that may be relevant to the latest user message "
        "(most relevant first; they may be outdated):"
    ]
    for record, _score in hits:
        tags = f" (tags: {', '.join(record.tags)})" if record.tags else ""
        date = record.updated_at.date().isoformat()
        lines.append(f"- [{record.id} · {date} · {record.kind}] {record.text}{tags}")
    if with_tools:
        lines.append(
            "Use `recall` to search more, `remember` to store or correct a memory, "
            "and `forget` with an id to delete one."
        )
    return "\n".join(lines)


class MemoryOps:
    """The memory operations of one agent configuration."""

    def __init__(
        self, bank: MemoryBank, config: MemoryConfig, clock: Callable[[], datetime]
    ) -> None:
        self.bank = bank
        self.config = config
        self.clock = clock
        self.min_score = (
            config.min_score if config.min_score is not None else default_min_score(bank.embedder)
        )
        """The threshold in force: the configured one, or the embedder's calibrated one."""

    async def _nearest(
        self, key: OwnerKey, records: Mapping[str, Any], vector: NDArray[np.float32]
    ) -> tuple[MemoryRecord | None, float]:
        import numpy as np

        best: MemoryRecord | None = None
        best_score = -2.0
        hits = await self.bank.search(key, records, vector, 1)
        if hits:
            best, best_score = hits[0]
        q = vector / max(float(np.linalg.norm(vector)), 1e-12)
        for _mid, value, staged in self.bank.pending_vectors(key):
            score = float(np.dot(staged, q) / max(float(np.linalg.norm(staged)), 1e-12))
            if score > best_score:
                record = parse_entry(value)
                if record is not None:
                    best, best_score = record, score
        return best, best_score

    async def remember(
        self,
        key: OwnerKey,
        records: Mapping[str, Any] | None,
        text: str,
        *,
        kind: str | None = None,
        tags: Sequence[str] | None = None,
        source: MemorySource,
    ) -> Remembered:
        """Stage a new memory, or an update of a near-duplicate (cosine >= threshold)."""
        records = records if records is not None else {}
        text = text.strip()
        vector = (await self.bank.embed([text]))[0]
        nearest, score = await self._nearest(key, records, vector)
        now = self.clock()
        if nearest is not None and score >= self.config.dedupe_threshold:
            record = nearest.model_copy(
                update={
                    "text": text,
                    "kind": kind or nearest.kind,
                    "tags": _clean_tags([*nearest.tags, *(tags or ())]),
                    "updated_at": now,
                    "source": source,
                }
            )
            merged = True
        else:
            record = MemoryRecord(
                id=new_memory_id(),
                text=text,
                kind=kind or "fact",
                tags=_clean_tags(tags),
                created_at=now,
                updated_at=now,
                source=source,
                embedder=self.bank.embedder.id,
            )
            merged = False
        data = record.to_state()
        self.bank.stage(key, record.id, data, vector)
        return Remembered(
            record=record,
            command=records_command(self.config.state_scope, {record.id: data}),
            merged_into_existing=merged,
            similarity=score if merged else None,
        )

    def forget(
        self,
        key: OwnerKey,
        records: Mapping[str, Any] | None,
        memory_id: str,
        *,
        source: MemorySource,
    ) -> Command | None:
        """Stage a tombstone for ``memory_id``; ``None`` if no such live memory exists."""
        if not is_live((records or {}).get(memory_id)):
            return None
        data = Tombstone(id=memory_id, updated_at=self.clock(), source=source).to_state()
        self.bank.stage(key, memory_id, data, None)
        return records_command(self.config.state_scope, {memory_id: data})

    async def recall(
        self,
        key: OwnerKey,
        records: Mapping[str, Any] | None,
        query: str | NDArray[np.float32],
        k: int,
        min_score: float | None = None,
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``k`` most similar live memories at or above ``min_score``."""
        if not records:
            return []
        vector = (await self.bank.embed([query]))[0] if isinstance(query, str) else query
        threshold = self.min_score if min_score is None else min_score
        return await self.bank.search(key, records, vector, k, threshold)
