"""``awaken worker``: process the ingress's jobs from the shell."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import signal
import sys
from datetime import timedelta
from typing import Any

__all__ = ["add_worker_command", "load_setup", "main"]


def add_worker_command(sub: Any) -> None:
    """Add ``worker`` to the ``awaken`` command (entry point ``awaken.commands``)."""
    worker = sub.add_parser("worker", help="process runs submitted to the PostgreSQL run ingress")
    worker.add_argument("--queue", required=True, help="PostgreSQL URL of the ingress queue")
    worker.add_argument("--schema", default="awaken_ingress", help="schema of the queue tables")
    worker.add_argument("--store", required=True, help="store URL (e.g. postgresql://...)")
    worker.add_argument(
        "--agents",
        help="an agent file, or a folder of them (the format of awaken run and awaken serve)",
    )
    worker.add_argument(
        "--setup",
        help="MODULE:FUNCTION called with the AgentRuntimeBuilder (adds agents, models, tools)",
    )
    worker.add_argument("--concurrency", type=int, default=4, help="jobs at once (default 4)")
    worker.add_argument(
        "--agent-limit",
        action="append",
        default=[],
        metavar="AGENT=N",
        help="at most N runs of AGENT at once across all workers (repeatable)",
    )
    worker.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=10.0,
        help="seconds before a silent worker's jobs are taken over (default 10)",
    )
    worker.set_defaults(func=_cmd_worker)


def load_setup(spec: str) -> Any:
    """The function ``MODULE:FUNCTION`` names; ``SystemExit`` naming what is missing."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"error: --setup {spec!r} must look like MODULE:FUNCTION")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SystemExit(f"error: --setup {spec!r}: cannot import {module_name!r}: {exc}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise SystemExit(f"error: --setup {spec!r}: {module_name!r} has no function {attr!r}")
    return fn


def add_agent_files(builder: Any, source: str) -> None:
    """Register every agent file of ``source`` (a file or a folder) with ``builder``."""
    from pathlib import Path

    from awaken_runtime import AgentFile

    root = Path(source)
    if root.is_dir():
        paths = sorted(p for p in root.iterdir() if p.suffix.lower() in _AGENT_SUFFIXES)
    elif root.is_file():
        paths = [root]
    else:
        raise SystemExit(f"error: --agents {source!r} is neither a file nor a folder")
    if not paths:
        raise SystemExit(f"error: --agents {source!r} holds no agent file (.toml, .json, .yaml)")
    for path in paths:
        found = AgentFile.load(path)
        found.register_parts(builder).with_agent_spec(found.config)


_AGENT_SUFFIXES = (".toml", ".json", ".yaml", ".yml")


def _limits(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        agent, _, number = value.partition("=")
        if not agent or not number.isdigit():
            raise SystemExit(f"error: --agent-limit {value!r} must look like AGENT=N")
        out[agent] = int(number)
    return out


def _cmd_worker(args: argparse.Namespace) -> int:
    from awaken_runtime import AgentRuntimeBuilder, AwakenError
    from awaken_runtime.stores import open_store

    from ._worker import Worker

    if not (args.setup or args.agents):
        raise SystemExit("error: give --agents (agent files), --setup MODULE:FUNCTION, or both")
    setup = load_setup(args.setup) if args.setup else None
    store = open_store(args.store)
    builder = AgentRuntimeBuilder().with_store(store).with_progress_records()
    if setup is not None:
        setup(builder)  # first: the models and tools the agent files name
    if args.agents:
        try:
            add_agent_files(builder, args.agents)
        except AwakenError as exc:
            raise SystemExit(f"error: {exc}") from None
    runtime = builder.build()
    worker = Worker(
        runtime,
        args.queue,
        schema=args.schema,
        concurrency=args.concurrency,
        per_agent=_limits(args.agent_limit),
        heartbeat_timeout=timedelta(seconds=args.heartbeat_timeout),
    )

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
        try:
            opener = getattr(store, "open", None)
            if opener is not None:
                # Open (and check the schema of) the store before taking any job: a worker
                # older than the store's schema refuses to start instead of failing jobs.
                try:
                    await opener()
                except AwakenError as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 1
            agents = len(worker.agents)
            print(f"awaken worker: {agents} agent(s), queue schema {args.schema}", flush=True)
            await worker.run()
        finally:
            close = getattr(store, "close", None)
            if close is not None:
                await close()
        return 0

    return asyncio.run(main())


def main(argv: list[str] | None = None) -> int:
    """``python -m awaken_run_ingress worker ...``: the same command without the runtime CLI."""
    parser = argparse.ArgumentParser(prog="awaken-run-ingress")
    sub = parser.add_subparsers(dest="command", required=True)
    add_worker_command(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
