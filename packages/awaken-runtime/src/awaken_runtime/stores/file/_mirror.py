"""The file backend's locked, in-process mirror of its directory.

:class:`FileMirror` owns the lock, the read positions (tails) of the files
this process has read, and the :class:`Core` rebuilt from them. Under
:meth:`FileMirror.locked` it first reads what other processes appended to
the global log, cutting off a global line whose thread line never landed;
:meth:`FileMirror.sync_thread` then reads one thread's new lines. Appends
made through :meth:`FileMirror.append` advance the tails, so this process
never re-reads its own writes. The store (:class:`~._store.FileStore`) calls
these under the lock and decides what to write.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from pydantic import ValidationError

from ..._errors import InvalidId, check_id
from ...messages._message import Message
from ...messages._stored import StoredMessages
from ...state._engine import Command, CommittedBatch, Scope
from ...suspension._suspension import ParkedRun
from .._errors import StoreCorrupt, StoreIOError
from .._records import ConfigVersion, StreamEvent
from .._rows import MESSAGES, decode_rows, no_gc
from .._thread_store import RunRecord, ScopeBinding
from ..memory._core import Core, Prepared, ThreadData
from ._jsonl import append_line, atomic_write, exclusive, fsync_dir, read_lines, truncate_to
from ._lines import frame, parse_line

__all__ = ["FileMirror", "Tail", "read_event_log"]


def _decode(path: str, what: str, rows: list[Any], first: int) -> list[Message]:
    """Messages from their JSON texts (framed lines) or parsed objects (older lines)."""
    # Runs on the thread that first reads the messages (a run's, on the event loop).
    out: list[Message] = []
    with no_gc():
        i, n = 0, len(rows)
        while i < n:  # a run of rows of one kind at a time
            parsed = not isinstance(rows[i], bytes)
            j = i + 1
            while j < n and (not isinstance(rows[j], bytes)) is parsed:
                j += 1
            out += decode_rows(
                path, what, MESSAGES, Message, rows[i:j], first + i + 1, parsed=parsed
            )
            i = j
    return out


_NAME_MAX = 255
"""Bytes in one file name on every common file system (ext4, APFS, NTFS)."""


def _file_name(kind: str, item_id: str) -> str:
    try:
        name = quote(item_id, safe="") + ".jsonl"
    except UnicodeEncodeError:
        check_id(kind, item_id)  # raises InvalidId naming the surrogate
        raise
    if len(name) > _NAME_MAX:
        raise InvalidId(
            kind,
            item_id,
            f"is too long for the file store: its file name would be {len(name)} bytes and "
            f"file systems allow {_NAME_MAX}",
            "use a shorter id (at most 249 ASCII letters, digits or '-_.~'; other characters "
            "take 3 to 12 bytes each), or the SQLite store",
        )
    return name


def read_event_log(path: Path) -> list[StreamEvent]:
    """Every event in a run's log ([] if none): one JSONL file, read whole (short, pruned)."""
    records, _end, _lines = read_lines(path, 0, 0)
    try:
        return [StreamEvent.model_validate(r) for _o, r in records]
    except ValidationError as exc:
        raise StoreCorrupt(str(path), f"an entry is not a stream event ({exc})") from None


@dataclass(slots=True)
class Tail:
    """How much of a file this process has read."""

    ino: int = 0
    pos: int = 0
    lines: int = 0


class FileMirror:
    """The lock, the tails and the :class:`Core` of one store directory."""

    def __init__(self, directory: Path, max_threads: int = 256) -> None:
        if max_threads < 1:
            raise ValueError(f"max_cached_threads must be at least 1, got {max_threads}")
        self.dir = directory
        self.max_threads = max_threads
        """Threads kept in memory between operations; the least recently used go first."""
        self._recent: OrderedDict[str, None] = OrderedDict()
        try:
            for sub in ("threads", "events"):
                (directory / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreIOError(str(directory), "create the directory of", exc) from exc
        self.core = Core()
        self.commits: dict[str, set[str]] = {}
        """Commit ids seen per thread (a global line is kept only if its commit landed)."""
        self.run_index: dict[str, str] = {}
        """Run id -> thread id, from the global log."""
        self.global_path = directory / "global.jsonl"
        self._mutex = threading.RLock()
        self._tails: dict[Path, Tail] = {}

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the process and file locks, with the global log read to its end."""
        with self._mutex, exclusive(self.dir / "LOCK"):
            self._sync_global()
            try:
                yield
            finally:
                self._trim()

    def _trim(self) -> None:
        # Everything is on disk: an evicted thread is re-read from its file when next used.
        recent = self._recent
        while len(recent) > self.max_threads:
            tid, _ = recent.popitem(last=False)
            self.forget(tid)
            self._tails.pop(self.thread_path(tid), None)

    def thread_path(self, thread_id: str) -> Path:
        """The JSONL file of a thread (``InvalidId`` if no file can have that name)."""
        return self.dir / "threads" / _file_name("thread id", thread_id)

    def event_path(self, run_id: str) -> Path:
        """The JSONL event log of a run."""
        return self.dir / "events" / _file_name("run id", run_id)

    def event_runs(self) -> list[str]:
        """The run ids of every event log in the directory."""
        return [unquote(p.name[: -len(".jsonl")]) for p in (self.dir / "events").glob("*.jsonl")]

    # -- reading ----------------------------------------------------------------------

    def tail(self, path: Path, reset: Callable[[], None]) -> Tail | None:
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

    def sync_thread(self, tid: str) -> ThreadData | None:
        """Read the thread's new lines; its mirrored data, or None if it has no file."""
        path = self.thread_path(tid)
        recent = self._recent
        recent[tid] = None
        recent.move_to_end(tid)
        tail = self.tail(path, lambda: self.forget(tid))
        if tail is None:
            return None
        # One pause of the collector (see no_gc) for reading and replaying, with the parsed
        # lines dropped inside it: a pause each made the collector, resumed in between,
        # walk every parsed line once before the replay began.
        with no_gc():
            records, end, _lines = read_lines(path, tail.pos, tail.lines, parse_line)
            # A thread read from the start keeps its messages undecoded until a run reads
            # them (``StoredMessages``); lines read later (other processes' commits) are few
            # and decoded as they come.
            rows: list[Any] | None = [] if tid not in self.core.threads else None
            try:
                for _offset, record in records:
                    self._replay(tid, record, path, tail.lines + 1, rows)
                    tail.lines += 1
                if rows:
                    self.core.threads[tid].messages = StoredMessages.lazy(
                        rows, partial(_decode, str(path), f"thread {tid!r} message")
                    )
            except StoreCorrupt:
                # Forget what was replayed: the next access reads the file from its start and
                # fails the same way, so no commit is ever appended on top of a bad line.
                self.forget(tid)
                del self._tails[path]
                raise
            finally:
                del records
        tail.pos = end
        return self.core.threads.get(tid)

    def all_threads(self) -> list[str]:
        """Every thread with a file, sorted, each synced."""
        names = [unquote(p.name[: -len(".jsonl")]) for p in (self.dir / "threads").glob("*.jsonl")]
        return sorted(t for t in names if self.sync_thread(t) is not None)

    def forget(self, tid: str) -> None:
        """Drop a thread and its run records from the mirror."""
        thread = self.core.threads.pop(tid, None)
        self.commits.pop(tid, None)
        for run_id in thread.run_ids if thread else ():
            self.core.runs.pop(run_id, None)

    def _replay(
        self, tid: str, rec: dict[str, Any], path: Path, line: int, rows: list[Any] | None
    ) -> None:
        """Apply one commit line. Its messages are decoded, or (``rows`` given: the thread is
        read from its start) their JSON objects are indexed and added to ``rows`` undecoded."""
        try:
            texts = rec.get("mj")  # a framed line's message texts (see _lines.py)
            raw = rec["m"] if texts is None else texts
            if rows is not None:
                if not isinstance(raw, list):
                    raise TypeError(f"messages are not a list but {type(raw).__name__}")
                messages = []
            elif texts is None:
                messages = MESSAGES.validate_python(raw)  # one call per line, not per message
            else:
                messages = MESSAGES.validate_json(b"[" + b",".join(texts) + b"]")
                if len(messages) != len(texts):
                    raise TypeError("a message text holds more than one message")
            batches = [CommittedBatch.model_validate(b) for b in rec["b"]]
            parked = ParkedRun.model_validate(rec["p"]) if rec["p"] else None
            binding = ScopeBinding(tid, "", "")
            core = self.core
            if rec.get("snap"):
                self.forget(tid)
                if rows is not None:
                    rows.clear()
                record = None
            else:
                record = RunRecord.model_validate(rec["r"]) if rec["r"] else None
            version = core.apply_commit(
                binding, messages, Prepared(batches, record), parked, rec["at"], scoped=False
            )
            thread = core.threads[tid]
            if rows is not None:
                if texts is None:
                    thread.index_rows(raw)
                else:
                    thread.msg_ids.update(rec["ids"])
                    thread.call_ids.update(rec["calls"])
                rows += raw
            if rec.get("snap"):
                for run_data in rec["runs"]:
                    run = RunRecord.model_validate(run_data)
                    core.runs[run.run_id] = run
                    thread.run_ids.append(run.run_id)
                thread.latest_run_id = rec["latest"]
                thread.version = rec["v"]
                self.commits[tid] = set(rec["cs"])
                return
            self.commits.setdefault(tid, set()).add(rec["c"])
        except (KeyError, TypeError, ValidationError) as exc:
            raise StoreCorrupt(str(path), f"line {line} is not a valid commit ({exc})") from None
        if version != rec["v"]:
            raise StoreCorrupt(str(path), f"line {line} has version {rec['v']}, expected {version}")

    def _sync_global(self) -> None:
        path = self.global_path
        tail = self.tail(path, self._reset_global)
        if tail is None:
            return
        records, end, _ = read_lines(path, tail.pos, tail.lines)
        if records:
            offset, last = records[-1]
            tid, cid = last.get("t"), last.get("c")
            if tid is not None and cid is not None:
                self.sync_thread(tid)
                if cid not in self.commits.get(tid, ()):
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
        self.run_index.clear()

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
                self.run_index[rec["run"]] = rec["t"]
            if "cfg" in rec:
                cfg = ConfigVersion.model_validate(rec["cfg"])
                self.core.configs.setdefault(cfg.agent_id, []).append(cfg)
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreCorrupt(str(path), f"line {line} is not a valid entry ({exc})") from None

    # -- writing ----------------------------------------------------------------------

    def append(self, path: Path, line: str | bytes, *, sync: bool = True) -> int:
        """Append a line this process wrote and advance its tail; returns the old size.

        ``sync=False``: the caller fsyncs the file later (see ``_io.py``).
        """
        tail = self._tails.get(path)
        old = tail.pos if tail is not None else 0
        size = append_line(path, line.encode() if isinstance(line, str) else line, sync=sync)
        if tail is None:
            tail = self._tails[path] = Tail(ino=path.stat().st_ino)
        tail.pos, tail.lines = size, tail.lines + 1
        return old

    def reset_tail(self, path: Path, size: int, lines: int) -> None:
        """``path`` was rewritten by this process with ``lines`` lines, ``size`` bytes."""
        self._tails[path] = Tail(ino=path.stat().st_ino, pos=size, lines=lines)

    def undo_thread(self, tid: str, size: int) -> None:
        """Cut a thread's file back to ``size`` and forget the thread (re-read when next used)."""
        path = self.thread_path(tid)
        truncate_to(path, size)
        self._tails.pop(path, None)
        self.forget(tid)

    def undo_global(self, size: int) -> None:
        """Cut the global log back to ``size``, undoing this process's last append."""
        truncate_to(self.global_path, size)
        tail = self._tails[self.global_path]
        tail.pos = size
        tail.lines -= 1

    def remove_thread(self, tid: str) -> None:
        """Delete a thread's file and forget it (its event logs and lease are the caller's)."""
        path = self.thread_path(tid)
        path.unlink()
        fsync_dir(path.parent)
        self._tails.pop(path, None)
        self.forget(tid)

    def mark_deleted(self, tid: str) -> None:
        """Append a marker for a deleted thread to the global log.

        The log's last line may be the thread's commit; a marker after it keeps
        the next reader from taking it for a commit that never landed.
        """
        self.append(self.global_path, json.dumps({"deleted": tid}) + "\n")

    def compact(self, tid: str) -> None:
        """Rewrite a thread's file as one snapshot line (atomic rename); a no-op if absent."""
        thread = self.sync_thread(tid)
        if thread is None:
            return
        snap = {
            "snap": 1,
            "v": thread.version,
            "at": thread.updated_at,
            "b": [b.model_dump(mode="json") for b in thread.batches],
            "runs": [self.core.runs[r].model_dump(mode="json") for r in thread.run_ids],
            "latest": thread.latest_run_id,
            "p": thread.parked.model_dump(mode="json") if thread.parked else None,
            "cs": sorted(self.commits.get(tid, ())),
        }
        path = self.thread_path(tid)
        data = frame(json.dumps(snap, ensure_ascii=False), list(thread.messages)) + b"\n"
        atomic_write(path, data)
        self._tails[path] = Tail(ino=path.stat().st_ino, pos=len(data), lines=1)

    def compact_global(self) -> None:
        """Rewrite the global log as the current state, run index and configs."""
        lines: list[dict[str, Any]] = [
            {"state": [scope.value, owner, {k: v for (_s, k), v in values.items()}]}
            for (scope, owner), values in self.core.scoped.items()
        ]
        lines += [{"run": run_id, "t": tid} for run_id, tid in self.run_index.items()]
        lines += [
            {"cfg": v.model_dump(mode="json")} for vs in self.core.configs.values() for v in vs
        ]
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        path = self.global_path
        atomic_write(path, data)
        self._tails[path] = Tail(path.stat().st_ino, len(data), len(lines))
