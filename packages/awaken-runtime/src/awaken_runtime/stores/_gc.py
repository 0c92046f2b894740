"""Decoding many stored rows without the cyclic garbage collector running over and over."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_gc"]


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding many rows.

    Decoding allocates many small objects and no cycles, so every collection
    it triggers (some of them full ones, over every object of the process)
    finds nothing to free: on a busy process that was half of a load's CPU.
    Collection resumes, with the same thresholds, when the block ends.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
