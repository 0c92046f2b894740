"""Durable JSONL primitives for the file backend: lock, append+fsync, tail recovery."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import StoreCorrupt, StoreIOError

__all__ = [
    "append_line",
    "atomic_write",
    "exclusive",
    "fsync_dir",
    "fsync_file",
    "read_lines",
    "truncate_to",
]

log = logging.getLogger("awaken_runtime.stores")


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block.

    ``flock`` on POSIX, ``msvcrt.locking`` on Windows; other processes wait.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreIOError(str(path), "lock", exc) from exc
    try:
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_lines(
    path: Path, start: int, first_line: int, parse: Callable[[bytes], Any] = json.loads
) -> tuple[list[tuple[int, dict[str, Any]]], int, int]:
    """Parse the complete lines of ``path`` from byte ``start`` (each with ``parse``).

    Returns ``([(line offset, record), ...], end offset, line count)``. A last line without its
    newline is what a crash mid-append leaves: it is cut off the file (the
    caller holds the lock) and logged, never fatal. Any other bad line raises
    ``StoreCorrupt`` naming the file and line.
    """
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
    except FileNotFoundError:
        return [], start, first_line
    except OSError as exc:
        raise StoreIOError(str(path), "read", exc) from exc
    records: list[tuple[int, dict[str, Any]]] = []
    pos, line = 0, first_line
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            log.warning(
                "store file %s: dropping a torn last line (%d bytes at byte %d) left by an "
                "interrupted write",
                path,
                len(data) - pos,
                start + pos,
            )
            _truncate(path, start + pos)
            break
        line += 1
        try:
            value = parse(data[pos:end])
        except ValueError as exc:
            raise StoreCorrupt(str(path), f"line {line} is not valid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise StoreCorrupt(str(path), f"line {line} is not a JSON object")
        records.append((start + pos, value))
        pos = end + 1
    return records, start + pos, line


def _truncate(path: Path, size: int) -> None:
    try:
        with open(path, "r+b") as f:
            f.truncate(size)
            os.fsync(f.fileno())
    except OSError as exc:
        raise StoreIOError(str(path), "repair (truncate a torn line of)", exc) from exc


def append_line(path: Path, line: bytes, *, sync: bool = True) -> int:
    """Append ``line`` (ending in a newline) and fsync; return the new size.

    ``sync=False`` leaves the fsync to the caller (:func:`fsync_file`), which
    may then flush several files' appends in one round. On failure the file
    is cut back to its old size and ``StoreIOError`` raised.
    """
    new = not path.exists()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreIOError(str(path), "open for append", exc) from exc
    size = os.fstat(fd).st_size
    try:
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
        if new:
            fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise StoreIOError(str(path), "append to", exc) from exc
    finally:
        os.close(fd)
    return size + len(line)


def fsync_file(path: Path) -> None:
    """Make what was appended to ``path`` durable (``StoreIOError`` if it cannot be)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # Windows flushes only writable handles
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreIOError(str(path), "flush (fsync)", exc) from exc


def truncate_to(path: Path, size: int) -> None:
    """Cut ``path`` back to ``size`` bytes (undo an append)."""
    _truncate(path, size)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temp file, fsync, rename, fsync dir)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreIOError(str(path), "rewrite", exc) from exc


def fsync_dir(directory: Path) -> None:
    """Make a directory's entries (new, renamed, removed files) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
