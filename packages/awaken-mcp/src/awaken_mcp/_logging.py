"""The MCP ``logging`` capability: a call's log records, sent to the client at its level.

Offered only when asked (``build_server(..., forward_logs=True)``, ``awaken mcp
serve --logging``). While a ``tools/call`` runs, every Python log record made
in its task (the run, its tools, its plugins; a context variable says which
call is current, so concurrent calls never see each other's records) at or
above the client's level becomes a ``notifications/message`` on that call's
stream, sent before the call's result. The level is what the client set with
``logging/setLevel`` on its connection (handshake era; a stateless HTTP request
is its own connection, so there it is the default, ``info``); 2026-07-28
clients opt in per request and the SDK applies that level.

The records must reach the handler: loggers drop what is below their level
before any handler runs, so the ``awaken mcp serve --logging`` command lowers
the root logger to DEBUG (and keeps warnings on stderr with its own handler).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
import weakref
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning

__all__ = ["LogForwarding"]

log = logging.getLogger("awaken_mcp")

_TO_PYTHON: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}
DEFAULT_LEVEL = "info"


def _mcp_level(levelno: int) -> types.LoggingLevel:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno > logging.INFO:
        return "notice"
    return "info" if levelno >= logging.INFO else "debug"


class _Sink:
    """Where the records of one call go."""

    def __init__(self, session: Any, request_id: Any, threshold: int) -> None:
        self.session = session
        self.request_id = request_id
        self.threshold = threshold
        self.sending: list[asyncio.Task[None]] = []

    def send(self, record: logging.LogRecord) -> None:
        if record.levelno < self.threshold or record.name.startswith(("mcp", "httpx", "sse_")):
            return  # the protocol's own chatter would echo itself
        data = {"message": record.getMessage()}
        with warnings.catch_warnings():
            # Deprecated from 2026-07-28 on (the SDK then applies the per-request opt-in).
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            coro = self.session.send_log_message(
                _mcp_level(record.levelno),
                data,
                logger=record.name,
                related_request_id=self.request_id,
            )
        self.sending.append(asyncio.get_running_loop().create_task(coro))

    async def flush(self) -> None:
        results = await asyncio.gather(*self.sending, return_exceptions=True)
        for failed in (r for r in results if isinstance(r, BaseException)):
            log.debug("a log notification was not delivered: %r", failed)


_SINK: ContextVar[_Sink | None] = ContextVar("awaken_mcp_log_sink", default=None)


class _Handler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        sink = _SINK.get()
        if sink is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: another thread's record
                sink.send(record)


class LogForwarding:
    """The ``logging/setLevel`` handler and the per-call forwarding of log records."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._handler = _Handler(level=logging.NOTSET)
        root = logging.getLogger()
        if not any(isinstance(h, _Handler) for h in root.handlers):
            root.addHandler(self._handler)

    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        """``logging/setLevel``: the level of this connection's calls from now on."""
        session = getattr(ctx, "session", None)
        if session is not None:
            self._levels[getattr(session, "_connection", session)] = params.level
        return types.EmptyResult()

    @contextlib.asynccontextmanager
    async def forwarding(self, ctx: Any) -> AsyncIterator[None]:
        """Forward the records made inside this block to ``ctx``'s client."""
        session = getattr(ctx, "session", None)
        if session is None:
            yield
            return
        level = self._levels.get(getattr(session, "_connection", session), DEFAULT_LEVEL)
        sink = _Sink(session, getattr(ctx, "request_id", None), _TO_PYTHON.get(level, logging.INFO))
        token = _SINK.set(sink)
        try:
            yield
        finally:
            _SINK.reset(token)
            await sink.flush()
