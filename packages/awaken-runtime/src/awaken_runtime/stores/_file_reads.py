"""The file backend's cursor reads, run records and thread listing/deletion."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..messages._message import Message
from ..state._engine import CommittedBatch
from ._jsonl import fsync_dir
from ._memory import page
from ._ports import Page, ThreadInfo
from ._thread_store import RunRecord

if TYPE_CHECKING:
    from ._core import Core, ThreadData

__all__ = ["FileReads"]


class FileReads:
    """Mixin of :class:`FileStore`: reads and thread administration."""

    dir: Path
    core: Core
    _tails: dict[Path, Any]
    _run_index: dict[str, str]
    _global: Path

    if TYPE_CHECKING:

        def _locked(self) -> AbstractContextManager[None]: ...
        def _sync_thread(self, tid: str) -> ThreadData | None: ...
        def _thread_path(self, thread_id: str) -> Path: ...
        def _forget(self, tid: str) -> None: ...
        def _event_path(self, run_id: str) -> Path: ...
        def _drop_lease(self, thread_id: str) -> None: ...
        def _append(self, path: Path, line: str) -> int: ...

    # -- reads, runs, threads ---------------------------------------------------------

    async def read_messages(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[Message]:
        """Messages with seq > ``after``."""
        with self._locked():
            thread = self._sync_thread(thread_id)
            return page(thread.messages if thread else [], after, limit)

    async def read_batches(
        self, thread_id: str, after: int = 0, limit: int = 100
    ) -> Page[CommittedBatch]:
        """Persisted batches with seq > ``after``."""
        with self._locked():
            thread = self._sync_thread(thread_id)
            return page(thread.batches if thread else [], after, limit)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The record of ``run_id``."""
        with self._locked():
            tid = self._run_index.get(run_id)
            if tid is not None:
                self._sync_thread(tid)
            return self.core.runs.get(run_id)

    async def list_runs(self, thread_id: str) -> list[RunRecord]:
        """A thread's run records, oldest first."""
        with self._locked():
            thread = self._sync_thread(thread_id)
            return [self.core.runs[r] for r in thread.run_ids] if thread else []

    def _all_threads(self) -> list[str]:
        names = [unquote(p.name[: -len(".jsonl")]) for p in (self.dir / "threads").glob("*.jsonl")]
        return sorted(t for t in names if self._sync_thread(t) is not None)

    async def list_threads(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        parked: bool | None = None,
        updated_after: datetime | None = None,
    ) -> list[ThreadInfo]:
        """Threads ordered by id after ``after``, filtered (reads every thread file)."""
        with self._locked():
            out = []
            for tid in self._all_threads():
                info = self.core.info(tid)
                if after is not None and tid <= after:
                    continue
                if parked is not None and info.parked != parked:
                    continue
                if updated_after is not None and info.updated_at <= updated_after:
                    continue
                out.append(info)
            return out[:limit]

    async def delete_thread(self, thread_id: str) -> bool:
        """Remove the thread's file, its runs' event logs and its lease."""
        with self._locked():
            thread = self._sync_thread(thread_id)
            if thread is None:
                return False
            for run_id in thread.run_ids:
                self._event_path(run_id).unlink(missing_ok=True)
                self.core.events.pop(run_id, None)
            path = self._thread_path(thread_id)
            path.unlink()
            fsync_dir(path.parent)
            self._tails.pop(path, None)
            self._forget(thread_id)
            self._drop_lease(thread_id)
            # The global log's last line may be this thread's commit; a marker after
            # it keeps the next reader from taking it for a commit that never landed.
            self._append(self._global, json.dumps({"deleted": thread_id}) + "\n")
            return True
