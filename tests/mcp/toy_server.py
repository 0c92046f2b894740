"""A small MCP server on the official SDK (``MCPServer``), run over stdio by the tests.

Its tools misbehave on purpose: ``crash`` kills the process mid-call,
``slow`` waits until it is cancelled and records that in ``$TOY_MARKS``,
``grow`` adds a tool and announces the change, ``picture`` returns an image,
``huge`` returns megabytes, ``garbage`` writes a non-JSON-RPC line to stdout.
Nothing is printed to stdout (the stdio transport's channel).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from pathlib import Path

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

MARKS = Path(os.environ.get("TOY_MARKS", "/dev/null"))
server = MCPServer("toy", log_level="CRITICAL")


def mark(text: str) -> None:
    with MARKS.open("a", encoding="utf-8") as f:
        f.write(text + "\n")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    mark(f"crash {os.getpid()}")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, noting a cancellation in the marks file."""
    mark("slow started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark("slow cancelled")
        raise
    mark("slow finished")
    return "slept"


def extra(n: int) -> str:
    """A tool added by grow."""
    return f"extra {n}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `extra` and tell the clients the tool list changed."""
    server.add_tool(extra, name="extra")
    await ctx.notify_tools_changed()
    # Handshake-era clients learn it from the notification; a 2026-07-28 session
    # has no unsolicited notifications (its clients listen), so this may refuse.
    with contextlib.suppress(Exception):
        await ctx.session.send_tool_list_changed()
    return "grown"


_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@server.tool()
def picture() -> list[types.TextContent | types.ImageContent]:
    """A caption and a one-pixel PNG."""
    image = types.ImageContent(data=_PNG, mime_type="image/png")
    return [types.TextContent(text="a red dot"), image]


@server.tool()
def chart() -> list[types.ImageContent | types.TextContent]:
    """An image first, then its caption."""
    return [types.ImageContent(data=_PNG, mime_type="image/png"), types.TextContent(text="fig. 1")]


@server.tool()
async def book(city: str, ctx: Context) -> str | types.InputRequiredResult:
    """Book a table, asking the user how many people (2026-07-28 input rounds)."""
    got = (ctx.input_responses or {}).get("party")
    if not isinstance(got, types.ElicitResult):
        mark(f"book asked {city}")
        form = types.ElicitRequestFormParams(
            message=f"How many people in {city}?",
            requested_schema={
                "type": "object",
                "properties": {"people": {"type": "integer"}},
                "required": ["people"],
            },
        )
        return types.InputRequiredResult(
            input_requests={"party": types.ElicitRequest(params=form)}, request_state="asked"
        )
    if got.action != "accept" or not got.content:
        return "not booked"
    return f"booked for {got.content['people']} in {city}"


@server.tool()
def huge(megabytes: float) -> str:
    """A text result of about ``megabytes`` MB."""
    return "x" * int(megabytes * 1024 * 1024)


def _wire() -> int:
    """The descriptor the SDK serves stdio on (it diverts fd 1 to stderr to guard the wire)."""
    err = os.fstat(2).st_ino
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(name)
        if fd <= 2:
            continue
        with contextlib.suppress(OSError):
            flags = Path(f"/proc/self/fdinfo/{fd}").read_text().split("flags:")[1].split()[0]
            st = os.fstat(fd)
            if stat.S_ISFIFO(st.st_mode) and int(flags, 8) & os.O_WRONLY and st.st_ino != err:
                return fd
    raise RuntimeError("no wire descriptor found")


@server.tool()
async def garbage() -> str:
    """Write a line that is not JSON-RPC to stdout, then take a long time."""
    mark(f"garbage {os.getpid()}")
    os.write(_wire(), b"DEBUG: this line is not JSON-RPC\n")
    await asyncio.sleep(60)
    return "late"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


def serve_http(port: int, key: str) -> None:
    """Streamable HTTP on 127.0.0.1:port; requests must carry ``X-Toy-Key: key``."""
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and dict(scope["headers"]).get(b"x-toy-key") != key.encode():
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no key"})
            return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--http":
        serve_http(int(sys.argv[2]), sys.argv[3])
    else:
        server.run("stdio")
