"""A stdio MCP server process as an SDK transport that always ends it.

The SDK's own stdio transport hides the process, so its exit status and
stderr never reach an error message, and it splits stdout by copying the
whole pending buffer per chunk (a 30 MB result took minutes and blocked
every call behind it). This one:

- starts the server in a session of its own (its children share its group)
  and registers it with ``_reaper`` until it is ended;
- reads stdout in linear time, one message per line, and refuses a message
  over ``max_result_bytes`` without holding it: a response is answered with
  a ``RESULT_TOO_LARGE`` error for its request id, the rest of the line is
  skipped and the connection goes on;
- ends the connection on output that is not JSON-RPC (the stream can no
  longer be trusted), keeping the offending line for the error;
- keeps the last 64 KiB of stderr for error messages;
- on leaving, closes stdin, waits ``stop_grace``, sends SIGTERM to the
  group, waits again, then SIGKILL; shielded, so a cancelled caller cannot
  leave the process behind.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from . import _reaper
from ._config import McpServerConfig

__all__ = ["RESULT_TOO_LARGE", "ServerProcess"]

log = logging.getLogger("awaken_mcp")

RESULT_TOO_LARGE = -32070
"""The JSON-RPC error code a refused oversized response is answered with (implementation range)."""

_STDERR_KEEP = 64 * 1024
_HEAD = 512
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')
_RESPONSE = re.compile(rb'"(?:result|error)"\s*:')


def _response_id(head: bytes) -> types.RequestId | None:
    """The request id of a (truncated) response line, or None if it is not one."""
    found = _ID.search(head)
    if found is None or _RESPONSE.search(head) is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, str | int) else None


class ServerProcess:
    """One start of a stdio server: its pid, exit status, stderr tail, and why it ended."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.pid: int | None = None
        self.returncode: int | None = None
        self.fault: str | None = None
        """Set when awaken ended the connection itself (output that is not JSON-RPC)."""
        self._process: Process | None = None
        self._stderr = bytearray()
        self.ended = anyio.Event()
        """Set when stdout ends (the server exited or closed it) or awaken ended the stream."""

    # -- reporting ----------------------------------------------------------------

    def stderr_tail(self, lines: int = 10) -> list[str]:
        """The server's last ``lines`` lines of stderr."""
        text = self._stderr.decode("utf-8", "replace")
        return [line for line in text.splitlines() if line.strip()][-lines:]

    async def settle(self, timeout: float = 1.0) -> None:
        """Wait (bounded) for the process to exit, so its status can be reported."""
        process = self._process
        if process is None:
            return
        with anyio.move_on_after(timeout):
            while process.returncode is None:
                await anyio.sleep(0.01)
        self.returncode = process.returncode

    def describe(self) -> str:
        """What is known about how the server ended, for an error message ("" if nothing)."""
        bits: list[str] = []
        if self.fault:
            bits.append(self.fault)
        if self.returncode is not None:
            code = self.returncode
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            bits.append(f"the server process {self.pid} ended ({how})")
        tail = self.stderr_tail()
        if tail:
            bits.append("its last stderr lines: " + " | ".join(tail))
        return "; ".join(bits)

    # -- the transport ----------------------------------------------------------------

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        """Start the server; yield the SDK's (read, write) streams; end it on leaving."""
        c = self.config
        process = await anyio.open_process(
            [c.command or "", *c.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=get_default_environment() | dict(c.env),
            cwd=c.cwd,
            start_new_session=True,
        )
        # No await until the task group holds it: a cancellation here would leak it.
        self._process, self.pid = process, process.pid
        _reaper.track(process.pid)
        inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outbound, outbound_recv = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_stdout, process, inbound_send)
                tg.start_soon(self._read_stderr, process)
                tg.start_soon(self._write_stdin, process, outbound_recv, inbound_send)
                try:
                    yield inbound, outbound
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop(process)
                        for stream in (inbound, outbound, inbound_send, outbound_recv):
                            await stream.aclose()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop(process)  # idempotent: the group may not have started

    async def _read_stdout(
        self, process: Process, sink: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        assert process.stdout is not None
        limit = self.config.max_result_bytes
        pieces: list[bytes] = []
        size = 0
        head = b""
        try:
            async with sink:
                async for chunk in process.stdout:
                    start = 0
                    while True:
                        nl = chunk.find(b"\n", start)
                        piece = chunk[start:] if nl < 0 else chunk[start:nl]
                        if len(head) < _HEAD:
                            head += piece[: _HEAD - len(head)]
                        size += len(piece)
                        if size <= limit:
                            pieces.append(piece)
                        elif pieces:
                            pieces = []  # over the limit: hold nothing more of it
                        if nl < 0:
                            break
                        if not await self._deliver(pieces, size, head, sink):
                            return
                        pieces, size, head = [], 0, b""
                        start = nl + 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            return
        finally:
            self.ended.set()
            await _drain(process.stdout)

    async def _deliver(
        self,
        pieces: list[bytes],
        size: int,
        head: bytes,
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> bool:
        limit = self.config.max_result_bytes
        if size > limit:
            rid = _response_id(head)
            if rid is None:
                log.warning(
                    "MCP server %r sent a %d-byte message over max_result_bytes=%d; dropped",
                    self.config.id,
                    size,
                    limit,
                )
                return True
            error = types.ErrorData(
                code=RESULT_TOO_LARGE,
                message=f"the result is {size} bytes, over max_result_bytes={limit}",
            )
            await sink.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=error)))
            return True
        line = b"".join(pieces).strip()
        if not line:
            return True
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            shown = line[:160].decode("utf-8", "replace")
            self.fault = f"it wrote output that is not JSON-RPC to stdout ({shown!r})"
            log.warning("MCP server %r: %s; closing the connection", self.config.id, self.fault)
            return False  # leaving closes the sink: every pending request fails at once
        await sink.send(SessionMessage(message))
        return True

    async def _read_stderr(self, process: Process) -> None:
        assert process.stderr is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            async for chunk in process.stderr:
                self._stderr += chunk
                if len(self._stderr) > _STDERR_KEEP:
                    del self._stderr[: len(self._stderr) - _STDERR_KEEP]

    async def _write_stdin(
        self,
        process: Process,
        source: MemoryObjectReceiveStream[SessionMessage],
        inbound: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdin is not None
        try:
            async with source:
                async for message in source:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await inbound.aclose()  # the server stopped reading: pending requests fail now

    async def _stop(self, process: Process) -> None:
        """Close stdin, then SIGTERM and SIGKILL the group, each after ``stop_grace``."""
        grace = self.config.stop_grace
        if process.stdin is not None:
            with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                await process.stdin.aclose()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and not _reaper.kill_group(process.pid, sig):
                break  # nothing is left of the group
            with anyio.move_on_after(grace if sig is not signal.SIGKILL else 5.0):
                while process.returncode is None:
                    await anyio.sleep(0.01)
            if process.returncode is not None and sig is None:
                # The leader left on its own; its children (same group) go too.
                _reaper.kill_group(process.pid, signal.SIGKILL)
                break
        self.returncode = process.returncode
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    await stream.aclose()
        if process.returncode is not None:
            _reaper.forget(process.pid)


async def _drain(stdout: ByteReceiveStream) -> None:
    """Read and drop what is left, so a server writing to a full pipe can still exit.

    Not shielded: the transport cancels it once the process is ended, even if a
    child that left the group still holds the pipe open.
    """
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            await stdout.receive()
