"""Cooperative cancellation for a run."""

from __future__ import annotations

import asyncio

__all__ = ["CancellationToken"]


class CancellationToken:
    """A flag a run checks at every phase boundary; long tool calls may await it.

    Cancelling is cooperative: the loop ends the run with ``Cancelled`` at the
    next boundary, keeping everything committed before it.
    """

    __slots__ = ("_event", "_reason")

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._reason: str | None = None

    def cancel(self, reason: str = "cancelled") -> None:
        """Request cancellation (idempotent)."""
        if self._reason is None:
            self._reason = reason
        if self._event is not None:
            self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """The reason given to :meth:`cancel`, if any."""
        return self._reason

    async def wait(self) -> None:
        """Return once cancellation is requested."""
        if self._event is None:
            self._event = asyncio.Event()
            if self._reason is not None:
                self._event.set()
        await self._event.wait()
