"""``awaken acp --agent FILE``: an agent over the Agent Client Protocol on stdio."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

__all__ = ["add_acp_command", "main"]


def add_acp_command(sub: Any) -> None:
    """Add ``acp`` to the ``awaken`` command's subparsers (entry point ``awaken.commands``)."""
    acp = sub.add_parser(
        "acp", help="serve an agent to an ACP client (an editor such as Zed) on stdin/stdout"
    )
    _options(acp)
    acp.set_defaults(func=_cmd_acp)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent", required=True, help="agent file (the format `awaken run --agent` takes)"
    )
    parser.add_argument(
        "--store",
        help="store URL where sessions (threads) live: sqlite:///path/awaken.db keeps them for "
        "session/load (default: $AWAKEN_STORE, else a SQLite file in $XDG_DATA_HOME/awaken)",
    )
    parser.add_argument("--setup", help="MODULE:FUNCTION called with the runtime builder")


def _cmd_acp(args: argparse.Namespace) -> int:
    from awaken_runtime import AgentConfigError
    from awaken_runtime.stores import default_store_url

    from ._build import build_runtime, load_setup
    from ._channel import claim_stdout
    from ._serve import serve_stdio

    # First, before any import or setup hook can print: stdout is the protocol channel.
    frames = claim_stdout()
    url = args.store or default_store_url()
    try:
        setup = load_setup(args.setup) if args.setup else None
        runtime, agent_id = build_runtime(args.agent, url, setup)
    except AgentConfigError as exc:
        sys.stderr.write(f"awaken acp: {exc}\n")
        return 2
    sys.stderr.write(f"awaken acp: agent {agent_id!r}, store {url}; speaking ACP on stdio\n")

    async def serve() -> None:
        await runtime.warm_up(agent_id)  # the provider's heavy import before the first prompt
        try:
            await serve_stdio(runtime, agent_id, frames=frames)
        finally:
            close = getattr(runtime.store, "close", None)
            if close is not None:
                await close()

    asyncio.run(serve())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m awaken_protocol_acp``: the same command without the runtime CLI."""
    parser = argparse.ArgumentParser(prog="awaken acp", description=__doc__)
    _options(parser)
    return _cmd_acp(parser.parse_args(argv))
