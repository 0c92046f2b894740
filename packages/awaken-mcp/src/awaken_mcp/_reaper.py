"""Every stdio server process still running ends with this interpreter.

A connection ends its server itself (``_stdio``); this is the last line for
the cases where its event loop never gets to: ``sys.exit`` with connections
open, a loop stopped mid-run, a runtime dropped without ``aclose()`` whose
finalizer ran after the loop closed. At exit each live server's process
group gets SIGTERM, then SIGKILL after a grace period. Servers start in a
session of their own, so the group id is the server's pid and its children
go with it.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time

__all__ = ["forget", "kill_group", "live", "track"]

_GRACE = 2.0
_live: set[int] = set()
_lock = threading.Lock()
_registered = False


def track(pid: int) -> None:
    """Note a started server process (its group is ended at exit unless forgotten)."""
    global _registered
    with _lock:
        _live.add(pid)
        if not _registered:
            atexit.register(_at_exit)
            _registered = True


def forget(pid: int) -> None:
    """The process was ended and reaped by its connection."""
    with _lock:
        _live.discard(pid)


def live() -> set[int]:
    """The server processes started and not yet ended (a copy)."""
    with _lock:
        return set(_live)


def kill_group(pid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to the server's process group; False when nothing is left of it."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _gone(pid: int) -> bool:
    # Reap it when it is our child (a zombie still answers kill(pid, 0)).
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        done = 0
    if done:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # pid reused by another user's process: not ours any more
        return True
    return False


def _at_exit() -> None:
    pids = live()
    if not pids:
        return
    for pid in pids:
        kill_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        waiting = {p for p in waiting if not _gone(p)}
        if waiting:
            time.sleep(0.02)
    for pid in pids:  # the leader may be gone while its children still run
        kill_group(pid, signal.SIGKILL)
        _gone(pid)
    with _lock:
        _live.difference_update(pids)
