"""The file backend's lease table: an append-only log, compacted now and then.

Each lease change (taken, renewed, released) appends one line naming the
thread and its new lease (``null``: released), so an acquire or release
costs one short append, whatever the number of live leases. Every process
reads only the lines appended since it last looked. When the log holds many
more lines than live leases it is rewritten as the live leases (atomic
rename) under a new random first line, which readers compare with the one
they read before (an inode number can come back after a rename).

Appends are not fsynced: a lease only matters while its holder lives, and
the appends reach every process on the machine through the page cache; after
a power loss every holder is gone and a lost line is a lease that expired.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._errors import StoreCorrupt
from .._ports import Lease
from ..memory._core import Core
from ._jsonl import atomic_write, read_lines
from ._mirror import FileMirror

__all__ = ["LeaseLog"]

_SLACK = 64
"""Lines beyond twice the live leases before the log is compacted."""


class LeaseLog:
    """``leases.jsonl`` of one store directory, mirrored into ``core.leases``."""

    def __init__(self, files: FileMirror) -> None:
        self.files = files
        self.path: Path = files.dir / "leases.jsonl"
        self._head = b""
        """The first line of the log as this process last read it."""

    def sync(self) -> Core:
        """Read the lines other processes appended (call under the store's lock)."""
        files, path = self.files, self.path
        core = files.core
        tail = files.tail(path, core.leases.clear)
        if tail is None:
            core.leases.clear()
            return core
        if tail.pos and self._first_line() != self._head:
            core.leases.clear()  # compacted by another process: read it from the start
            tail.pos = tail.lines = 0
        records, end, _lines = read_lines(path, tail.pos, tail.lines)
        if tail.pos == 0:
            self._head = self._first_line()
        for _offset, record in records:
            tail.lines += 1
            if "gen" in record:
                continue
            try:
                tid, raw = record["t"], record["l"]
                if raw is None:
                    core.leases.pop(tid, None)
                else:
                    core.leases[tid] = Lease.model_validate(raw)
            except (KeyError, TypeError, ValidationError) as exc:
                raise StoreCorrupt(
                    str(path), f"line {tail.lines} is not a lease entry ({exc})"
                ) from None
        tail.pos = end
        return core

    def changed(self, thread_id: str, lease: Lease | None) -> None:
        """Record the thread's new lease (``None``: released)."""
        files = self.files
        raw: Any = lease.model_dump(mode="json") if lease is not None else None
        files.append(self.path, json.dumps({"t": thread_id, "l": raw}) + "\n", sync=False)
        tail = files.tail(self.path, files.core.leases.clear)
        if tail is not None and tail.lines > 2 * len(files.core.leases) + _SLACK:
            self._compact()

    def _first_line(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                return f.readline(256)
        except FileNotFoundError:
            return b""

    def _compact(self) -> None:
        leases = self.files.core.leases
        lines = [json.dumps({"gen": os.urandom(8).hex()}) + "\n"]
        lines += [
            json.dumps({"t": tid, "l": lease.model_dump(mode="json")}) + "\n"
            for tid, lease in leases.items()
        ]
        data = "".join(lines).encode()
        atomic_write(self.path, data)
        self.files.reset_tail(self.path, len(data), len(lines))
        self._head = lines[0].encode()
