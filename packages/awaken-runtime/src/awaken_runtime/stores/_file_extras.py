"""The file backend's event logs, scoped state, configs, leases and retention."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from ..state._engine import Command, Scope
from ._errors import StoreCorrupt
from ._jsonl import atomic_write, read_lines
from ._memory import config_dict, find_config
from ._ports import ConfigVersion, Lease, PruneReport, StreamEvent, cutoff

if TYPE_CHECKING:
    from ._core import Core, ThreadData

__all__ = ["FileExtras"]


class FileExtras:
    """Mixin of :class:`FileStore`: everything besides thread commits and reads."""

    dir: Path
    core: Core
    _global: Path
    _run_index: dict[str, str]

    if TYPE_CHECKING:

        def _locked(self) -> AbstractContextManager[None]: ...
        def _append(self, path: Path, line: str) -> int: ...
        def _all_threads(self) -> list[str]: ...
        def _compact(self, tid: str) -> None: ...
        def _sync_thread(self, tid: str) -> ThreadData | None: ...

    # -- stream events ----------------------------------------------------------------

    def _event_path(self, run_id: str) -> Path:
        return self.dir / "events" / (quote(run_id, safe="") + ".jsonl")

    def _events(self, run_id: str) -> list[StreamEvent]:
        path = self._event_path(run_id)
        records, _end, _lines = read_lines(path, 0, 0)
        try:
            return [StreamEvent.model_validate(r) for _o, r in records]
        except ValidationError as exc:
            raise StoreCorrupt(str(path), f"an entry is not a stream event ({exc})") from None

    async def append_events(self, run_id: str, events: Sequence[StreamEvent]) -> None:
        """Append to the run's event log (seqs must increase)."""
        if not events:
            return
        with self._locked():
            self.core.events[run_id] = self._events(run_id)
            self.core.check_events(run_id, events)
            self._append(
                self._event_path(run_id), "".join(e.model_dump_json() + "\n" for e in events)
            )

    async def read_events(
        self, run_id: str, after: int = 0, limit: int = 1000
    ) -> list[StreamEvent]:
        """Events with seq > ``after``."""
        with self._locked():
            return [e for e in self._events(run_id) if e.seq > after][:limit]

    # -- profile / shared scope ---------------------------------------------------------

    async def read_scope(self, scope: Scope, owner: str) -> dict[str, Any]:
        """The state of one profile or namespace."""
        with self._locked():
            return self.core.read_scope(scope, owner)

    async def write_scope(self, scope: Scope, owner: str, commands: Sequence[Command]) -> None:
        """Apply commands to one profile or namespace (one fsynced line)."""
        ops = [[scope.value, owner, c.model_dump(mode="json")] for c in commands]
        with self._locked():
            self._append(self._global, json.dumps({"ops": ops}) + "\n")
            self.core.apply_scoped(scope, owner, commands)

    # -- configs ------------------------------------------------------------------------

    async def publish_config(
        self, config: Mapping[str, Any] | BaseModel, *, note: str = ""
    ) -> ConfigVersion:
        """Store a new config version."""
        agent_id, data = config_dict(config)
        with self._locked():
            version = self.core.next_config(agent_id, data, note)
            self._append(self._global, json.dumps({"cfg": version.model_dump(mode="json")}) + "\n")
            self.core.configs.setdefault(agent_id, []).append(version)
            return version

    async def get_config(self, agent_id: str, version: int | None = None) -> ConfigVersion:
        """The latest (or a given) config version."""
        with self._locked():
            return find_config(self.core.configs.get(agent_id), agent_id, version)

    async def config_history(self, agent_id: str) -> list[ConfigVersion]:
        """Kept versions, oldest first."""
        with self._locked():
            return list(self.core.configs.get(agent_id, []))

    async def rollback_config(self, agent_id: str, version: int) -> ConfigVersion:
        """Republish ``version`` as the newest version."""
        old = await self.get_config(agent_id, version)
        return await self.publish_config(old.config, note=f"rollback to version {version}")

    # -- leases -------------------------------------------------------------------------

    def _leases(self) -> Iterator[None]:
        path = self.dir / "leases.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            self.core.leases = {k: Lease.model_validate(v) for k, v in raw.items()}
        except (ValueError, ValidationError) as exc:
            raise StoreCorrupt(str(path), f"not a valid lease table ({exc})") from None
        before = dict(self.core.leases)
        yield
        if self.core.leases != before:
            data = {k: v.model_dump(mode="json") for k, v in self.core.leases.items()}
            atomic_write(path, json.dumps(data).encode())

    def _drop_lease(self, thread_id: str) -> None:
        for _ in self._leases():
            self.core.leases.pop(thread_id, None)

    async def acquire_lease(self, thread_id: str, holder: str, ttl: float) -> Lease:
        """Take the thread or raise ``ThreadBusy``."""
        with self._locked():
            for _ in self._leases():
                lease = self.core.acquire(thread_id, holder, ttl, os.urandom(8).hex())
            return lease

    async def renew_lease(self, lease: Lease, ttl: float) -> Lease:
        """Extend a held lease or raise ``LeaseLost``."""
        with self._locked():
            for _ in self._leases():
                renewed = self.core.renew(lease, ttl)
            return renewed

    async def release_lease(self, lease: Lease) -> None:
        """Give the thread up."""
        with self._locked():
            for _ in self._leases():
                self.core.release(lease)

    # -- retention ------------------------------------------------------------------------

    async def prune(self, older_than: datetime | timedelta) -> PruneReport:
        """Remove event logs of ended runs, superseded run records and config versions.

        Threads that lose run records and the global file are compacted
        (rewritten by atomic rename); messages, batches and state are kept.
        """
        cut = cutoff(older_than)
        with self._locked():
            self._all_threads()
            for path in (self.dir / "events").glob("*.jsonl"):
                events = self._events_by_path(path)
                if events:
                    self.core.events[events[0][0]] = events[0][1]
            had_events = set(self.core.events)
            report, touched = self.core.prune(cut)
            for run_id in had_events - set(self.core.events):
                self._event_path(run_id).unlink(missing_ok=True)
            for tid in touched:
                self._compact(tid)
            if report.configs:
                self._compact_global()
            return report

    def _events_by_path(self, path: Path) -> list[tuple[str, list[StreamEvent]]]:
        from urllib.parse import unquote

        run_id = unquote(path.name[: -len(".jsonl")])
        events = self._events(run_id)
        return [(run_id, events)] if events else []

    def _compact_global(self) -> None:
        lines: list[dict[str, Any]] = [
            {"state": [scope.value, owner, {k: v for (_s, k), v in values.items()}]}
            for (scope, owner), values in self.core.scoped.items()
        ]
        lines += [{"run": run_id, "t": tid} for run_id, tid in self._run_index.items()]
        lines += [
            {"cfg": v.model_dump(mode="json")} for vs in self.core.configs.values() for v in vs
        ]
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        atomic_write(self._global, data)
        from ._file import Tail

        self._tails[self._global] = Tail(self._global.stat().st_ino, len(data), len(lines))

    _tails: dict[Path, Any]
