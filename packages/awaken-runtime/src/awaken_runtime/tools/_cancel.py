"""Cooperative cancellation for a run."""

from __future__ import annotations

import asyncio

__all__ = ["CancellationToken"]


class CancellationToken:
    """Requests that a run stop; safe to trigger from any thread.

    The loop checks the token at every phase boundary. While a tool runs or
    the model streams, the loop arms the token: cancelling then interrupts
    that await (the tool or stream sees ``asyncio.CancelledError``) and the
    run ends ``Cancelled`` at that boundary, keeping everything committed
    before it. Long tools may also ``await ctx.cancel.wait()`` or poll
    ``ctx.cancel.cancelled`` to stop early on their own.
    """

    __slots__ = ("_armed", "_children", "_event", "_loop", "_reason", "_task")

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._reason: str | None = None
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._armed = False
        self._children: list[CancellationToken] = []

    def child(self) -> CancellationToken:
        """A token cancelled whenever this one is (for sub-runs)."""
        token = CancellationToken()
        self._children.append(token)
        if self._reason is not None:
            token.cancel(self._reason)
        return token

    def cancel(self, reason: str = "cancelled") -> None:
        """Request cancellation (idempotent, thread-safe)."""
        if self._reason is None:
            self._reason = reason
        for child in self._children:
            child.cancel(reason)
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if self._event is not None:
            self._event.set()
        task = self._task
        # Interrupt only an armed await, and never the task that is calling us
        # (a tool cancelling its own run just sets the flag).
        if self._armed and task is not None and task is not asyncio.current_task():
            task.cancel()

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
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
            if self._reason is not None:
                self._event.set()
        await self._event.wait()

    def attach(self) -> None:
        """Bind the token to the current task and loop (the loop calls this)."""
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()

    def arm(self) -> None:
        """Allow :meth:`cancel` to interrupt the current await."""
        self._armed = True

    def disarm(self) -> None:
        """Stop interrupting; cancellation is again only seen at boundaries."""
        self._armed = False
