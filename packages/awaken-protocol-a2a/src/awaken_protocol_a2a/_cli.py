"""``awaken a2a serve``: agents over A2A from the shell (entry point ``awaken.commands``).

A separate command (like ``awaken mcp serve``) rather than routes inside
``awaken serve``: it takes the same agent files, store, ``--setup`` hook and
bearer keys (``--keys FILE`` or ``AWAKEN_SERVER_KEYS``), so both servers can
run side by side on one store; ``create_a2a_app`` mounts into any Starlette app.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_a2a_command"]


def add_a2a_command(sub: Any) -> None:
    """Add ``a2a serve`` to the ``awaken`` command's subparsers."""
    a2a = sub.add_parser("a2a", help="A2A: serve agents to other agents (JSON-RPC + SSE)")
    a2a_sub = a2a.add_subparsers(dest="a2a_command", required=True)
    serve = a2a_sub.add_parser("serve", help="serve the agents over A2A")
    serve.add_argument("--agents", help="an agent file, or a folder of them (awaken run format)")
    serve.add_argument(
        "--agent", action="append", default=[], help="only this agent id (repeatable)"
    )
    serve.add_argument("--store", help="store URL (default: $AWAKEN_STORE, else a SQLite file)")
    serve.add_argument("--setup", help="MODULE:FUNCTION called with the runtime builder")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8002, help="port (default 8002)")
    serve.add_argument(
        "--public-url", help="the URL clients reach this server at (default http://HOST:PORT)"
    )
    serve.add_argument("--keys", help="file of key:profile lines (else $AWAKEN_SERVER_KEYS)")
    serve.add_argument("--no-auth", action="store_true", help="no keys (loopback only)")
    serve.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from awaken_runtime import AgentConfigError
    from awaken_runtime.stores import default_store_url, open_store
    from awaken_server import AgentCatalog, KeyConfigError, KeyRing, load_setup
    from awaken_server._cli import _is_loopback  # the same rule as `awaken serve`

    from ._app import create_a2a_app

    if args.no_auth and not _is_loopback(args.host):
        sys.stderr.write(
            f"awaken a2a serve: --no-auth is refused on {args.host!r}: bind 127.0.0.1 or "
            f"give --keys\n"
        )
        return 2
    try:
        keys = KeyRing.from_sources(args.keys, no_auth=args.no_auth)
        setup = load_setup(args.setup) if args.setup else None
        catalog = AgentCatalog.from_files(args.agents, setup)  # as `awaken run` reads them
        runtime = catalog.build(open_store(args.store or default_store_url()))
    except (KeyConfigError, AgentConfigError) as exc:
        sys.stderr.write(f"awaken a2a serve: {exc}\n")
        return 2
    ids = catalog.agent_ids()
    unknown = sorted(set(args.agent) - set(ids))
    if unknown or not ids:
        sys.stderr.write(
            f"awaken a2a serve: no agent {unknown[0] if unknown else '(none given)'!r}; the "
            f"agent files define {', '.join(ids) or '(none)'}\n"
        )
        return 2
    served = list(args.agent) or ids
    base = args.public_url or f"http://{args.host}:{args.port}"
    app = create_a2a_app(runtime, served, base_url=base, keys=keys, close_runtime=True)
    for agent_id in served:
        sys.stderr.write(f"awaken a2a serve: {agent_id} at {base}/a2a/{agent_id}\n")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
