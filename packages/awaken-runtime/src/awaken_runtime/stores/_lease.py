"""Holding a thread lease for the length of a run, renewed in the background."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

from ._ports import Lease, LeaseStore

__all__ = ["DEFAULT_LEASE_TTL", "hold_lease", "new_holder"]

log = logging.getLogger("awaken_runtime.stores")

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lives without renewal: a crashed holder blocks a thread this long."""


def new_holder() -> str:
    """A holder id naming this host and process."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


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
    if not isinstance(store, LeaseStore):
        yield None
        return
    if ttl is None:
        ttl = float(getattr(store, "lease_ttl", DEFAULT_LEASE_TTL))
    lease = await store.acquire_lease(thread_id, holder or new_holder(), ttl)
    current = [lease]

    period = ttl / 3

    async def renew() -> None:
        while True:
            await asyncio.sleep(period)
            try:
                current[0] = await store.renew_lease(current[0], period * 3)
            except Exception:
                log.exception("could not renew the lease on thread %r", thread_id)
                return

    task = asyncio.create_task(renew())
    try:
        yield lease
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        try:
            await store.release_lease(current[0])
        except Exception:
            log.exception("could not release the lease on thread %r", thread_id)
