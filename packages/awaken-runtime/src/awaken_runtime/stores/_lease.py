"""Holding a thread lease for the length of a run, renewed in the background."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import time
from collections.abc import AsyncIterator
from typing import TypeGuard

from ._errors import LeaseLost
from ._ports import Lease, LeaseStore
from ._thread_store import ThreadStore

__all__ = ["DEFAULT_LEASE_TTL", "LeaseGuard", "guard_lease", "hold_lease", "new_holder"]

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


class LeaseGuard:
    """A held lease that a run checks before it executes anything.

    The background renewal only runs when the run yields to the event loop;
    a run that never does (sync tools, a scripted model) must still notice a
    lapsed lease. So each boundary compares the clock with :attr:`check_at`
    and, once it has passed, renews inline with :meth:`ensure`, which raises
    ``LeaseLost`` once the lease cannot be held any more.
    """

    __slots__ = ("check_at", "lease", "lost", "store", "ttl")

    def __init__(self, store: LeaseStore, lease: Lease, ttl: float) -> None:
        self.store = store
        self.lease = lease
        self.ttl = ttl
        self.lost: LeaseLost | None = None
        self.check_at = lease.expires_at - ttl * 2 / 3
        """When the lease is next due for renewal (``time.time()`` seconds; minus
        infinity once lost)."""

    async def ensure(self) -> None:
        """Renew the lease if due; raise ``LeaseLost`` if it is lost."""
        if self.lost is None and time.time() >= self.check_at:
            await self.renew()
        if self.lost is not None:
            raise self.lost

    async def renew(self) -> None:
        """Extend the lease by its ttl; on failure, mark it lost once it cannot be held."""
        try:
            self.lease = await self.store.renew_lease(self.lease, self.ttl)
        except LeaseLost as exc:
            self._lose(exc)
            return
        except Exception as exc:
            # The store failed (disk full, network): the lease holds until it expires.
            log.warning("could not renew the lease on thread %r: %s", self.lease.thread_id, exc)
            now = time.time()
            if now >= self.lease.expires_at:
                self._lose(
                    LeaseLost(
                        f"the lease on thread {self.lease.thread_id!r} expired and could not "
                        f"be renewed ({type(exc).__name__}: {exc}); this run must stop"
                    )
                )
            else:
                self.check_at = min(self.lease.expires_at, now + self.ttl / 30)
            return
        self.check_at = time.time() + self.ttl / 3

    def _lose(self, exc: LeaseLost) -> None:
        self.lost = exc
        self.check_at = float("-inf")


@contextlib.asynccontextmanager
async def hold_lease(
    store: ThreadStore, thread_id: str, holder: str | None = None, ttl: float | None = None
) -> AsyncIterator[Lease | None]:
    """Hold ``thread_id``'s lease for the block (a no-op for a store without ``LeaseStore``).

    Raises ``ThreadBusy`` when another holder's lease is live. ``ttl``
    defaults to the store's ``lease_ttl`` attribute, else
    :data:`DEFAULT_LEASE_TTL`. The lease is renewed every ``ttl / 3`` seconds
    and released at the end.
    """
    async with guard_lease(store, thread_id, holder, ttl) as guard:
        yield guard.lease if guard is not None else None


@contextlib.asynccontextmanager
async def guard_lease(
    store: ThreadStore, thread_id: str, holder: str | None = None, ttl: float | None = None
) -> AsyncIterator[LeaseGuard | None]:
    """Like :func:`hold_lease`, yielding the :class:`LeaseGuard` a run checks."""
    if not _has_leases(store):
        yield None
        return
    if ttl is None:
        ttl = float(getattr(store, "lease_ttl", DEFAULT_LEASE_TTL))
    if _UNRELEASED:
        await _retry_releases(store)
    guard = LeaseGuard(
        store, await store.acquire_lease(thread_id, holder or new_holder(), ttl), ttl
    )
    period = ttl / 3
    loop = asyncio.get_running_loop()
    task: asyncio.Task[None] | None = None
    done = False

    async def renew() -> None:
        # `done` as well as the cancel: a cancel can be swallowed by a driver awaiting
        # with asyncio.wait_for on Python < 3.12 (its result won the race), and this
        # loop would then renew forever while the run's end waits for it.
        while guard.lost is None and not done:
            await guard.renew()
            await asyncio.sleep(period)
        if guard.lost is not None:
            log.error("lost the lease on thread %r: %s", thread_id, guard.lost)

    def start_renewing() -> None:
        nonlocal task
        task = loop.create_task(renew())

    # Most runs end well within a period: a timer costs far less than a task.
    timer = loop.call_later(period, start_renewing)
    try:
        yield guard
    finally:
        done = True
        timer.cancel()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        try:
            await store.release_lease(guard.lease)  # a lost lease: the store ignores it
        except Exception:
            log.exception(
                "could not release the lease on thread %r; retried before the next lease "
                "this process takes on the store (it expires anyway in %.0f s)",
                thread_id,
                ttl,
            )
            _UNRELEASED.setdefault(id(store), (store, []))[1].append(guard.lease)


_UNRELEASED: dict[int, tuple[LeaseStore, list[Lease]]] = {}
"""Leases whose release failed (disk full, network), per store: released at the next
opportunity, so the thread is not blocked for a whole ttl once the store works again."""


async def _retry_releases(store: LeaseStore) -> None:
    entry = _UNRELEASED.get(id(store))
    if entry is None or entry[0] is not store:
        return
    pending = entry[1]
    while pending:
        try:
            await store.release_lease(pending[0])
        except Exception:
            return  # still failing: the leases expire on their own
        pending.pop(0)
    del _UNRELEASED[id(store)]


_LEASE_SUPPORT: dict[type[object], bool] = {}


def _has_leases(store: ThreadStore) -> TypeGuard[LeaseStore]:
    # isinstance() against a runtime Protocol is slow; a store's type never changes.
    store_type = type(store)
    known = _LEASE_SUPPORT.get(store_type)
    if known is None:
        known = _LEASE_SUPPORT[store_type] = all(
            callable(getattr(store_type, name, None))
            for name in ("acquire_lease", "renew_lease", "release_lease")
        )
    return known
