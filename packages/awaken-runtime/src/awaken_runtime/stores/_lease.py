"""Holding a thread lease for the length of a run, renewed in the background."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

from ._ports import Lease

__all__ = ["DEFAULT_LEASE_TTL", "hold_lease", "new_holder"]

log = logging.getLogger("awaken_runtime.stores")

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lives without renewal: a crashed holder blocks a thread this long."""


def new_holder() -> str:
    """A holder id naming this host and process."""
    return f"{_host_pid()}:{os.urandom(4).hex()}"


@functools.cache
def _host_pid_cached(pid: int) -> str:
    return f"{socket.gethostname()}:{pid}"


def _host_pid() -> str:
    return _host_pid_cached(os.getpid())  # keyed by pid: stays right after a fork


@contextlib.asynccontextmanager
async def hold_lease(
    store: Any, thread_id: str, holder: str | None = None, ttl: float | None = None
) -> AsyncIterator[Lease | None]:
    """Hold ``thread_id``'s lease for the block (a no-op for stores without leases).

    Raises ``ThreadBusy`` when another holder's lease is live. ``ttl``
    defaults to the store's ``lease_ttl`` attribute, else
    :data:`DEFAULT_LEASE_TTL`. The lease is renewed every ``ttl / 3`` seconds
    and released at the end.
    """
    if not _has_leases(type(store)):
        yield None
        return
    if ttl is None:
        ttl = float(getattr(store, "lease_ttl", DEFAULT_LEASE_TTL))
    lease = await store.acquire_lease(thread_id, holder or new_holder(), ttl)
    current = [lease]
    period = ttl / 3
    loop = asyncio.get_running_loop()
    task: asyncio.Task[None] | None = None

    async def renew() -> None:
        while True:
            try:
                current[0] = await store.renew_lease(current[0], period * 3)
            except Exception:
                log.exception("could not renew the lease on thread %r", thread_id)
                return
            await asyncio.sleep(period)

    def start_renewing() -> None:
        nonlocal task
        task = loop.create_task(renew())

    # Most runs end well within a period: a timer costs far less than a task.
    timer = loop.call_later(period, start_renewing)
    try:
        yield lease
    finally:
        timer.cancel()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        try:
            await store.release_lease(current[0])
        except Exception:
            log.exception("could not release the lease on thread %r", thread_id)


_LEASE_SUPPORT: dict[type[Any], bool] = {}


def _has_leases(store_type: type[Any]) -> bool:
    # isinstance() against a runtime Protocol is slow; a store's type never changes.
    known = _LEASE_SUPPORT.get(store_type)
    if known is None:
        known = _LEASE_SUPPORT[store_type] = all(
            callable(getattr(store_type, name, None))
            for name in ("acquire_lease", "renew_lease", "release_lease")
        )
    return known
