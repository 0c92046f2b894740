"""``awaken mcp serve`` and ``awaken mcp list`` (entry point ``awaken.commands``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server import Server

    from awaken_runtime import Runtime

__all__ = ["SECRET_ENV", "add_mcp_command"]

SECRET_ENV = "AWAKEN_MCP_SECRET"
"""Signs the ``request_state`` of 2026-07-28 retries; the same on every worker."""


def add_mcp_command(sub: Any) -> None:
    """Add ``mcp serve`` and ``mcp list`` to the ``awaken`` command's subparsers."""
    mcp = sub.add_parser("mcp", help="MCP: serve awaken tools and agents, list MCP servers")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    serve = mcp_sub.add_parser("serve", help="serve the agents' tools over MCP (stdio or HTTP)")
    _common(serve)
    serve.add_argument(
        "--http", action="store_true", help="streamable HTTP (stateless) instead of stdio"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8001, help="port (default 8001)")
    serve.add_argument("--path", default="/mcp", help="endpoint path (default /mcp)")
    serve.add_argument("--keys", help="file of key:profile lines (else $AWAKEN_SERVER_KEYS)")
    serve.add_argument("--no-auth", action="store_true", help="HTTP without keys (loopback only)")
    serve.add_argument(
        "--agents-as-tools", action="store_true", help="also offer each agent as a tool"
    )
    serve.add_argument(
        "--tools-ungated",
        action="store_true",
        help="also serve tools whose agents have no tool gate (no policy), with no gate at all",
    )
    serve.add_argument(
        "--logging",
        action="store_true",
        help="offer MCP logging: each call's log records go to the client at its level",
    )
    serve.add_argument(
        "--sessions",
        action="store_true",
        help="session-ful HTTP (one worker): handshake-era clients can then be asked "
        "(elicitation) in the middle of a call",
    )
    serve.set_defaults(func=_cmd_serve)
    listing = mcp_sub.add_parser("list", help="MCP servers the agents use: status and tools")
    _common(listing)
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(func=_cmd_list)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agents", help="an agent file, or a folder of them (awaken run format)")
    parser.add_argument(
        "--agent", action="append", default=[], help="only this agent id (repeatable)"
    )
    parser.add_argument("--store", help="store URL (default: $AWAKEN_STORE, else a SQLite file)")
    parser.add_argument("--setup", help="MODULE:FUNCTION called with the runtime builder")


def _runtime(args: argparse.Namespace, command: str) -> tuple[Any, list[str]] | None:
    from awaken_runtime import AgentConfigError
    from awaken_runtime.stores import default_store_url, open_store
    from awaken_server import AgentCatalog, load_setup

    try:
        setup = load_setup(args.setup) if args.setup else None
        catalog = AgentCatalog.from_files(args.agents, setup)  # as `awaken run` reads them
        runtime = catalog.build(open_store(args.store or default_store_url()))
    except AgentConfigError as exc:
        sys.stderr.write(f"awaken mcp {command}: {exc}\n")
        return None
    ids = catalog.agent_ids()
    unknown = sorted(set(args.agent) - set(ids))
    if unknown:
        sys.stderr.write(
            f"awaken mcp {command}: no agent {unknown[0]!r}; the agent files define "
            f"{', '.join(ids) or '(none)'}\n"
        )
        return None
    return runtime, list(args.agent) or ids


def _cmd_serve(args: argparse.Namespace) -> int:
    from awaken_server import KeyConfigError, KeyRing

    from ._http import create_http_app, serve_stdio
    from ._server import build_server, plan_offer

    if args.http:
        from awaken_server._cli import _is_loopback  # the same rule as `awaken serve`

        if args.no_auth and not _is_loopback(args.host):
            sys.stderr.write(
                f"awaken mcp serve: --no-auth is refused on {args.host!r}: bind 127.0.0.1 "
                f"or give --keys\n"
            )
            return 2
        try:
            keys = KeyRing.from_sources(args.keys, no_auth=args.no_auth)
        except KeyConfigError as exc:
            sys.stderr.write(f"awaken mcp serve: {exc}\n")
            return 2
    built = _runtime(args, "serve")
    if built is None:
        return 2
    runtime, agent_ids = built
    try:
        offer = plan_offer(
            runtime,
            agent_ids,
            agents_as_tools=args.agents_as_tools,
            tools_ungated=args.tools_ungated,
        )
        server = build_server(
            runtime,
            agent_ids,
            agents_as_tools=args.agents_as_tools,
            tools_ungated=args.tools_ungated,
            forward_logs=args.logging,
            secret=_secret(),
        )
    except ValueError as exc:
        sys.stderr.write(f"awaken mcp serve: {exc}\n")
        return 2
    _announce(offer)
    if args.logging:
        _log_everything()
    if not args.http:
        # stdout is the protocol channel: everything else goes to stderr.
        sys.stderr.write(f"awaken mcp serve: stdio; agents: {', '.join(agent_ids)}\n")
        asyncio.run(_stdio(serve_stdio, server, runtime))
        return 0
    import uvicorn

    app = create_http_app(server, keys, path=args.path, host=args.host, stateless=not args.sessions)
    mode = "sessions, one worker" if args.sessions else "stateless"
    sys.stderr.write(
        f"awaken mcp serve: http://{args.host}:{args.port}{args.path} ({mode}); "
        f"agents: {', '.join(agent_ids)}\n"
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _secret() -> bytes | None:
    # Workers serving one endpoint must share it, or a 2026-07-28 retry that lands on
    # another worker is refused; one process picks its own.
    value = os.environ.get(SECRET_ENV, "")
    return value.encode() if value else None


def _log_everything() -> None:
    # Loggers drop records below their level before any handler sees them: let every
    # record through to the MCP handler, and keep stderr at warnings (what it showed).
    import logging

    root = logging.getLogger()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.WARNING)
    root.addHandler(stderr)
    root.setLevel(logging.DEBUG)


def _announce(offer: Any) -> None:
    """What is served without a gate (loudly), and what is not served and why (stderr)."""
    if offer.ungated:
        bar = "!" * 72
        names = ", ".join(sorted(offer.ungated))
        sys.stderr.write(
            f"{bar}\nawaken mcp serve: --tools-ungated: serving WITHOUT ANY GATE (no agent "
            f"policy, no permission check, no audit): {names}\n{bar}\n"
        )
    if offer.skipped:
        sys.stderr.write(
            f"awaken mcp serve: not serving {', '.join(sorted(offer.skipped))}: no agent that "
            f"lists them has a tool gate (enable the permissions plugin on it, or pass "
            f"--tools-ungated to serve them bare)\n"
        )


async def _stdio(
    serve: Callable[[Server[Any]], Awaitable[None]], server: Server[Any], runtime: Runtime
) -> None:
    try:
        await serve(server)
    finally:
        await runtime.aclose()


def _cmd_list(args: argparse.Namespace) -> int:
    from ._listing import list_servers

    built = _runtime(args, "list")
    if built is None:
        return 2
    runtime, agent_ids = built

    async def collect() -> list[dict[str, Any]]:
        try:
            return await list_servers(runtime, agent_ids)
        finally:
            await runtime.aclose()

    rows = asyncio.run(collect())
    if args.json:
        sys.stdout.write(json.dumps({"servers": rows}, indent=2) + "\n")
    elif not rows:
        sys.stdout.write("no agent enables the mcp plugin\n")
    for row in [] if args.json else rows:
        sys.stdout.write(
            f"{row['agent']}: {row['server']} ({row['transport']}: {row['target']}) "
            f"{row['status']}, {len(row['tools'])} tool(s)\n"
        )
        for tid in row["tools"]:
            sys.stdout.write(f"    {tid}\n")
        if row["error"]:
            sys.stdout.write(f"    error: {row['error']}\n")
    return 1 if any(r["status"] != "connected" for r in rows) else 0
