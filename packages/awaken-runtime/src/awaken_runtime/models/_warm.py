"""Warming executors up: what ``Runtime.warm_up`` runs at start."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["warm_up"]


async def warm_up(executors: Iterable[object]) -> None:
    """Await ``warm_up()`` of every executor that has one (heavy imports, first-call setup).

    An executor such as ``LiteLLMExecutor`` does that work in a worker thread,
    so a server that warms up at start never stalls its event loop on it.
    """
    pending = []
    for executor in executors:
        method = getattr(executor, "warm_up", None)
        if callable(method):
            pending.append(method())
    await asyncio.gather(*pending)
