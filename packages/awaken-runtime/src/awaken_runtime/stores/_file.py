"""``FileStore``: append-only JSONL files in a directory, fsynced, with a lock file.

Layout of the store directory::

    LOCK                  flock'ed by every operation (processes may share the store)
    threads/<id>.jsonl    one line per commit of the thread (compaction: one snapshot line)
    global.jsonl          profile/shared state changes, the run index, config versions
    events/<run>.jsonl    per-run stream event logs
    leases.json           live thread leases (rewritten atomically)

A commit appends its global line (if it has profile/shared writes or a new
run) first and its thread line second; the thread line is the commit point.
A global line whose thread line never landed (a crash in between) is cut off
by the next lock holder; a torn last line is cut off and logged. Each process
keeps an in-memory mirror (:class:`Core`) and reads only what other
processes appended since, so commits and loads cost O(new data).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError

from ..messages._message import Message
from ..state._engine import Command, CommittedBatch, Scope
from ..suspension._suspension import ParkedRun
from ._core import Core, Prepared, ThreadData
from ._errors import StoreCorrupt, StoreIOError
from ._file_extras import FileExtras
from ._file_reads import FileReads
from ._jsonl import append_line, atomic_write, exclusive, read_lines, truncate_to
from ._ports import ConfigVersion
from ._thread_store import RunRecord, ScopeBinding, ThreadSnapshot

__all__ = ["FileStore"]


@dataclass(slots=True)
class Tail:
    """How much of a file this process has read."""

    ino: int = 0
    pos: int = 0
    lines: int = 0


def _json(model: Any) -> str:
    return "null" if model is None else str(model.model_dump_json())


class FileStore(FileReads, FileExtras):
    """A full store in a directory of append-only JSONL files."""

    def __init__(self, directory: str | os.PathLike[str], *, lease_ttl: float = 30.0) -> None:
        self.dir = Path(directory)
        self.lease_ttl = lease_ttl
        """Seconds a run's lease on a thread lives without renewal."""
        try:
            for sub in ("threads", "events"):
                (self.dir / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreIOError(str(self.dir), "create the directory of", exc) from exc
        self.core = Core()
        self._mutex = threading.RLock()
        self._tails: dict[Path, Tail] = {}
        self._commits: dict[str, set[str]] = {}
        self._run_index: dict[str, str] = {}
        self._global = self.dir / "global.jsonl"

    # -- locking and syncing --------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex, exclusive(self.dir / "LOCK"):
            self._sync_global()
            yield

    def _thread_path(self, thread_id: str) -> Path:
        return self.dir / "threads" / (quote(thread_id, safe="") + ".jsonl")

    def _tail(self, path: Path, reset: Any) -> Tail | None:
        """The tail of ``path`` after resetting the mirror if the file was replaced."""
        tail = self._tails.get(path)
        try:
            st = path.stat()
        except FileNotFoundError:
            if tail is not None:
                reset()
                del self._tails[path]
            return None
        if tail is None or tail.ino != st.st_ino or st.st_size < tail.pos:
            if tail is not None:
                reset()
            tail = self._tails[path] = Tail(ino=st.st_ino)
        return tail

    def _sync_thread(self, tid: str) -> ThreadData | None:
        path = self._thread_path(tid)
        tail = self._tail(path, lambda: self._forget(tid))
        if tail is None:
            return None
        records, tail.pos, _lines = read_lines(path, tail.pos, tail.lines)
        for _offset, record in records:
            tail.lines += 1
            self._replay(tid, record, path, tail.lines)
        return self.core.threads.get(tid)

    def _forget(self, tid: str) -> None:
        thread = self.core.threads.pop(tid, None)
        self._commits.pop(tid, None)
        for run_id in thread.run_ids if thread else ():
            self.core.runs.pop(run_id, None)

    def _replay(self, tid: str, rec: dict[str, Any], path: Path, line: int) -> None:
        try:
            messages = [Message.model_validate(m) for m in rec["m"]]
            batches = [CommittedBatch.model_validate(b) for b in rec["b"]]
            parked = ParkedRun.model_validate(rec["p"]) if rec["p"] else None
            binding = ScopeBinding(tid, "", "")
            if rec.get("snap"):
                self._forget(tid)
                core = self.core
                core.apply_commit(
                    binding, messages, Prepared(batches, None), parked, rec["at"], scoped=False
                )
                thread = core.threads[tid]
                for raw in rec["runs"]:
                    run = RunRecord.model_validate(raw)
                    core.runs[run.run_id] = run
                    thread.run_ids.append(run.run_id)
                thread.latest_run_id = rec["latest"]
                thread.version = rec["v"]
                self._commits[tid] = set(rec["cs"])
                return
            record = RunRecord.model_validate(rec["r"]) if rec["r"] else None
            version = self.core.apply_commit(
                binding, messages, Prepared(batches, record), parked, rec["at"], scoped=False
            )
            self._commits.setdefault(tid, set()).add(rec["c"])
        except (KeyError, TypeError, ValidationError) as exc:
            raise StoreCorrupt(str(path), f"line {line} is not a valid commit ({exc})") from None
        if version != rec["v"]:
            raise StoreCorrupt(str(path), f"line {line} has version {rec['v']}, expected {version}")

    def _sync_global(self) -> None:
        path = self._global
        tail = self._tail(path, self._reset_global)
        if tail is None:
            return
        records, end, _ = read_lines(path, tail.pos, tail.lines)
        if records:
            offset, last = records[-1]
            tid, cid = last.get("t"), last.get("c")
            if tid is not None and cid is not None:
                self._sync_thread(tid)
                if cid not in self._commits.get(tid, ()):
                    truncate_to(path, offset)  # its thread line never landed
                    records.pop()
                    end = offset
        tail.pos = end
        for _offset, rec in records:
            tail.lines += 1
            self._apply_global(rec, path, tail.lines)

    def _reset_global(self) -> None:
        self.core.scoped.clear()
        self.core.configs.clear()
        self._run_index.clear()

    def _apply_global(self, rec: dict[str, Any], path: Path, line: int) -> None:
        try:
            for scope, owner, raw in rec.get("ops", ()):
                self.core.apply_scoped(Scope(scope), owner, [Command.model_validate(raw)])
            if "state" in rec:
                scope, owner, values = rec["state"]
                self.core.scoped[(Scope(scope), owner)] = {
                    (Scope(scope), k): v for k, v in values.items()
                }
            if rec.get("run"):
                self._run_index[rec["run"]] = rec["t"]
            if "cfg" in rec:
                cfg = ConfigVersion.model_validate(rec["cfg"])
                self.core.configs.setdefault(cfg.agent_id, []).append(cfg)
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreCorrupt(str(path), f"line {line} is not a valid entry ({exc})") from None

    def _append(self, path: Path, line: str) -> int:
        """Append a line this process wrote and advance its tail; returns the old size."""
        tail = self._tails.get(path)
        old = tail.pos if tail is not None else 0
        size = append_line(path, line.encode())
        if tail is None:
            tail = self._tails[path] = Tail(ino=path.stat().st_ino)
        tail.pos, tail.lines = size, tail.lines + 1
        return old

    # -- ThreadStore --------------------------------------------------------------------

    async def load(self, binding: ScopeBinding) -> ThreadSnapshot:
        """Load the thread plus its profile and shared state."""
        with self._locked():
            self._sync_thread(binding.thread_id)
            return self.core.snapshot(binding)

    async def commit(
        self,
        binding: ScopeBinding,
        expected_version: int,
        messages: Sequence[Message],
        batches: Sequence[CommittedBatch],
        run_record: RunRecord | None = None,
        parked: ParkedRun | None = None,
    ) -> int:
        """Append one fsynced line (two with profile/shared writes or a new run)."""
        tid = binding.thread_id
        with self._locked():
            self._sync_thread(tid)
            prep = self.core.prepare_commit(
                binding, expected_version, messages, batches, run_record
            )
            cid, at = os.urandom(8).hex(), time.time()
            scoped = [
                (c.scope, binding.owner(c.scope), c)
                for b in prep.batches
                for _p, c in b.entries
                if c.scope is not Scope.THREAD
            ]
            run_id = prep.record.run_id if prep.record is not None else None
            new_run = run_id is not None and run_id not in self._run_index
            undo = None
            if scoped or new_run:
                ops = [[s.value, o, c.model_dump(mode="json")] for s, o, c in scoped]
                entry = {"c": cid, "t": tid, "ops": ops, "run": run_id if new_run else None}
                undo = self._append(self._global, json.dumps(entry) + "\n")
            line = (
                f'{{"c":"{cid}","v":{expected_version + 1},"at":{at!r},"m":['
                + ",".join(m.model_dump_json() for m in messages)
                + '],"b":['
                + ",".join(b.model_dump_json() for b in prep.batches)
                + f'],"r":{_json(prep.record)},"p":{_json(parked)}}}\n'
            )
            try:
                self._append(self._thread_path(tid), line)
            except BaseException:
                if undo is not None:
                    truncate_to(self._global, undo)
                    self._tails[self._global].pos = undo
                    self._tails[self._global].lines -= 1
                raise
            version = self.core.apply_commit(binding, messages, prep, parked, at, scoped=False)
            self._commits.setdefault(tid, set()).add(cid)
            for scope, owner, command in scoped:
                self.core.apply_scoped(scope, owner, [command])
            if run_id is not None and new_run:
                self._run_index[run_id] = tid
            return version

    def compact(self, thread_id: str) -> None:
        """Rewrite a thread's file as one snapshot line (atomic rename); a no-op if absent."""
        with self._locked():
            self._compact(thread_id)

    def _compact(self, tid: str) -> None:
        thread = self._sync_thread(tid)
        if thread is None:
            return
        snap = {
            "snap": 1,
            "v": thread.version,
            "at": thread.updated_at,
            "m": [m.model_dump(mode="json") for m in thread.messages],
            "b": [b.model_dump(mode="json") for b in thread.batches],
            "runs": [self.core.runs[r].model_dump(mode="json") for r in thread.run_ids],
            "latest": thread.latest_run_id,
            "p": thread.parked.model_dump(mode="json") if thread.parked else None,
            "cs": sorted(self._commits.get(tid, ())),
        }
        path = self._thread_path(tid)
        data = (json.dumps(snap, ensure_ascii=False) + "\n").encode()
        atomic_write(path, data)
        self._tails[path] = Tail(ino=path.stat().st_ino, pos=len(data), lines=1)

    async def close(self) -> None:
        """Nothing stays open between operations."""
