"""``awaken serve``: the server from the shell."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from awaken_run_ingress import RunIngress
    from awaken_runtime.stores import FullStore

__all__ = ["add_serve_command", "main"]

_LOOPBACK_NAMES = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def add_serve_command(sub: Any) -> None:
    """Add ``serve`` to the ``awaken`` command's subparsers (entry point ``awaken.commands``)."""
    serve = sub.add_parser("serve", help="serve agents over HTTP/SSE (REST, AI SDK, AG-UI)")
    _options(serve)
    serve.set_defaults(func=_cmd_serve)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agents", help="an agent file, or a folder of them (awaken run format)")
    parser.add_argument("--store", help="store URL (default: $AWAKEN_STORE, else a SQLite file)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    parser.add_argument("--keys", help="file of key:profile lines (else $AWAKEN_SERVER_KEYS)")
    parser.add_argument(
        "--no-auth", action="store_true", help="no keys (loopback only; local development)"
    )
    parser.add_argument("--setup", help="MODULE:FUNCTION called with the runtime builder")
    parser.add_argument("--max-body", type=int, default=1_000_000, help="largest body in bytes")
    parser.add_argument("--max-runs-per-key", type=int, default=8, help="concurrent runs per key")
    parser.add_argument(
        "--cors-origin", action="append", default=[], help="allow this origin (repeatable)"
    )
    parser.add_argument(
        "--ingress",
        metavar="DSN",
        help="submit runs to the run ingress on this PostgreSQL database instead of running "
        "them here (awaken worker processes run them; --store must be their store)",
    )
    parser.add_argument(
        "--ingress-schema", default="awaken_ingress", help="the ingress's queue schema"
    )
    parser.add_argument(
        "--on-disconnect",
        choices=("cancel", "continue"),
        default="cancel",
        help="a dropped AI SDK / AG-UI stream: cancel its run at the next boundary (default), "
        "or let it continue so the client can resume the stream",
    )
    parser.add_argument(
        "--history",
        choices=("server", "client"),
        default="server",
        help="whose messages an AI SDK chat runs on: the server's thread (default; history "
        "a client sends must match it or extend it, else 409), or the client's list",
    )
    parser.add_argument(
        "--publishers",
        default="",
        help="comma list of profiles that may publish agent configs (default: none)",
    )


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from awaken_runtime import AgentConfigError
    from awaken_runtime.stores import default_store_url, open_store

    from ._agents import AgentCatalog, load_setup
    from ._app import ServerConfig, create_app
    from ._keys import KeyConfigError, KeyRing

    if args.no_auth and not _is_loopback(args.host):
        sys.stderr.write(
            f"awaken serve: --no-auth is refused on {args.host!r}: anyone who can reach it "
            f"could run agents; bind 127.0.0.1 or give --keys\n"
        )
        return 2
    try:
        keys = KeyRing.from_sources(args.keys, no_auth=args.no_auth)
        setup = load_setup(args.setup) if args.setup else None
        catalog = AgentCatalog.from_files(args.agents, setup)
    except (KeyConfigError, AgentConfigError) as exc:
        sys.stderr.write(f"awaken serve: {exc}\n")
        return 2
    if not keys.enabled:
        sys.stderr.write(
            "awaken serve: WARNING: --no-auth: every request runs as profile 'default' "
            "without a key. For local development only.\n"
        )
    url = args.store or default_store_url()
    try:
        store = open_store(url)
        catalog.build(store)  # fail on a bad agent before binding the port
        ingress = _ingress(args, store)
    except (AgentConfigError, TypeError, ImportError) as exc:
        sys.stderr.write(f"awaken serve: {exc}\n")
        return 2
    sys.stderr.write(
        f"awaken serve: store {url}; agents: {', '.join(catalog.agent_ids()) or '(none)'}\n"
    )
    config = ServerConfig(
        catalog=catalog,
        store=store,
        keys=keys,
        max_body=args.max_body,
        max_runs_per_key=args.max_runs_per_key,
        cors_origins=args.cors_origin,
        publishers=frozenset(p.strip() for p in args.publishers.split(",") if p.strip()),
        ingress=ingress,
        on_disconnect=args.on_disconnect,
        history=args.history,
    )
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        sys.stderr.write(f"awaken serve: cannot listen on {args.host}:{args.port}: {exc}\n")
        return 2
    # The bound address, so `--port 0` (any free port) tells where it listens.
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"awaken serve: listening on http://{shown}:{port}\n")
    sys.stderr.flush()
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", timeout_graceful_shutdown=15)
    )
    server.run(sockets=[sock])
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``0``: any free port), as uvicorn would open."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _ingress(args: argparse.Namespace, store: FullStore) -> RunIngress | None:
    """The ``RunIngress`` of ``--ingress`` (``None`` without it); refuses a store that other
    processes' event logs cannot be followed in."""
    if not args.ingress:
        return None
    from ._ingress_hub import check_tailable

    try:
        from awaken_run_ingress import RunIngress
    except ImportError as exc:
        raise ImportError(
            "--ingress needs awaken-run-ingress: pip install 'awaken-server[ingress]'"
        ) from exc
    check_tailable(store)
    return RunIngress(args.ingress, schema=args.ingress_schema)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``awaken-serve`` console script (the same as ``awaken serve``)."""
    parser = argparse.ArgumentParser(prog="awaken serve", description=__doc__)
    _options(parser)
    return _cmd_serve(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
