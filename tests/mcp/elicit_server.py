"""A stock MCP server (PyPI ``mcp`` 2.x, ``MCPServer``) whose tools ask with ``ctx.elicit``.

Run over stdio (no argument) or session-ful streamable HTTP (``--http PORT``).
``book`` asks how many people, ``pick`` asks twice, ``quick`` answers at once,
``nap`` sleeps. What the server asks and receives is appended to ``$TOY_MARKS``.
Nothing is printed to stdout (the stdio transport's channel).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel
from toy_server import mark  # this folder is on the path of a script run from it

server = MCPServer("elicit", log_level="CRITICAL")


class Party(BaseModel):
    people: int


class Colour(BaseModel):
    colour: str


@server.tool()
async def book(city: str, ctx: Context) -> str:
    """Book a table, asking the user how many people."""
    mark(f"book asked {city} pid={os.getpid()}")
    answer = await ctx.elicit(message=f"How many people in {city}?", schema=Party)
    mark(f"book answer {city} {answer.action}")
    if answer.action == "accept":
        return f"booked for {answer.data.people} in {city}"
    return f"not booked ({answer.action})"


@server.tool()
async def pick(ctx: Context) -> str:
    """Ask two questions in turn."""
    first = await ctx.elicit(message="First colour?", schema=Colour)
    second = await ctx.elicit(message="Second colour?", schema=Colour)
    if first.action == "accept" and second.action == "accept":
        return f"{first.data.colour} and {second.data.colour}"
    return f"{first.action}/{second.action}"


@server.tool()
def quick(text: str) -> str:
    """Answer at once."""
    return f"quick {text}"


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep, then answer."""
    mark(f"nap started pid={os.getpid()}")
    await asyncio.sleep(seconds)
    mark("nap ended")
    return f"napped {seconds}"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        import uvicorn

        uvicorn.run(
            server.streamable_http_app(),
            host="127.0.0.1",
            port=int(sys.argv[2]),
            log_level="warning",
        )
    else:
        server.run("stdio")
