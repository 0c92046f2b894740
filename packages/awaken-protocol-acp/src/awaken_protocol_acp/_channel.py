"""The stdio channel: stdin and stdout carry protocol frames, nothing else.

A tool that prints, a library banner or a stray ``print()`` in a setup hook
would corrupt the client's newline-delimited JSON. :func:`claim_stdout` moves
the real stdout aside (a duplicate descriptor only the connection writes to)
and points descriptor 1, and ``sys.stdout``, at stderr, so anything else
written "to stdout" lands in the log instead.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import IO

__all__ = ["claim_stdout", "stdio_streams"]


def claim_stdout() -> IO[bytes]:
    """Take the process's stdout for protocol frames; every other write goes to stderr."""
    sys.stdout.flush()
    frames = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return frames


async def stdio_streams(
    frames: IO[bytes], limit: int = 50 * 1024 * 1024
) -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    """Asyncio streams over stdin (read) and ``frames`` (write) for the ACP connection.

    ``limit`` bounds one incoming line (a prompt with embedded files can be large).
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, frames)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return writer, reader
