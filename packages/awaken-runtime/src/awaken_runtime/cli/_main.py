"""The ``awaken`` command: ``demo``, ``plugins``, ``run`` and ``resume``.

Subcommands import what they need when they run, so ``awaken --help`` stays
fast and never imports a model provider library.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

# awaken-server reads agent files and offers the echo model exactly as `awaken run`
# does, through these two names.
from ._build import echo, models_in_file
from ._new import add_new_command

_echo = echo
_models_in_file = models_in_file

if TYPE_CHECKING:
    from ..plugins._discovery import Discovery
    from ..runtime._runtime import Runtime

__all__ = ["main"]


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _renderer() -> Callable[[Any], None]:
    """An event sink printing a run the way the CLI shows it."""
    from ._demo import render_event

    color = sys.stdout.isatty()
    return lambda event: render_event(event, _write, color=color)


async def _close_store(runtime: Runtime) -> None:
    close = getattr(runtime.store, "close", None)
    if close is not None:
        await close()


def _where(url: str, thread_id: str) -> str:
    """The last line of a run: where its thread lives and how to continue it."""
    if url.startswith("memory:"):
        return (
            f"state: thread {thread_id} in {url}, gone when this process exits "
            f"(keep it with --store sqlite:///awaken.db)\n"
        )
    return f"state: thread {thread_id} saved in {url} (continue it with --thread {thread_id})\n"


async def _stream(
    runtime: Runtime, agent_id: str, prompt: str, args: argparse.Namespace | None = None
) -> int:
    from ..lifecycle._failures import Error
    from ..messages._message import new_id
    from ..stores import open_store
    from ._approve import drive_with_terminal, exit_status
    from ._report import failure_line

    url = getattr(args, "store", None) or "memory://"
    runtime.store = open_store(url)
    thread_id = getattr(args, "thread", None) or new_id("thread_")
    render = _renderer()
    _write(f"user> {prompt}\n")
    try:
        await runtime.warm_up(agent_id)  # its provider's heavy import, off the event loop
        state = await runtime.run(agent_id, prompt, thread_id=thread_id, on_event=render)
        # A run waiting on a permission ask: prompt in the terminal, or save the tickets.
        context = {
            "agent": getattr(args, "agent", None),
            "model": getattr(args, "model", None),
            "api_base": getattr(args, "api_base", None),
            "store": url,
        }
        state = await drive_with_terminal(
            runtime, state, stdin=sys.stdin, stdout=sys.stdout, context=context, on_event=render
        )
    finally:
        await _close_store(runtime)
    if isinstance(state.end_cause, Error):
        verbose = bool(getattr(args, "verbose", False))
        _write(failure_line(state.end_cause.failure, verbose=verbose) + "\n")
    # On stderr, so `awaken run ... > answer.txt` keeps only the answer.
    sys.stderr.write(_where(url, thread_id))
    return exit_status(state)


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import DEMO_PROMPT, build_demo_runtime

    # Paced on a terminal so the streaming shows; piped output is not slowed down.
    delay = args.delay if args.delay is not None else (0.04 if sys.stdout.isatty() else 0.0)
    _write("awaken demo: a weather agent on a scripted model (offline, no API key)\n\n")
    runtime = build_demo_runtime(delay=delay)
    return _run_stream(runtime, "weather", args.prompt or DEMO_PROMPT, args)


def _run_stream(runtime: Runtime, agent_id: str, prompt: str, args: argparse.Namespace) -> int:
    return asyncio.run(_stream(runtime, agent_id, prompt, args))


def _bound_summary(bound: Any) -> str:
    parts = []
    if bound.tool_ids:
        parts.append("tools=" + ",".join(sorted(bound.tool_ids)))
    if bound.state_keys:
        parts.append("state=" + ",".join(sorted(str(k) for k in bound.state_keys)))
    if bound.phase_hooks:
        parts.append("hooks=" + ",".join(sorted(p.value for p in bound.phase_hooks)))
    if bound.context_bands:
        parts.append("bands=" + ",".join(sorted(b.value for b in bound.context_bands)))
    flags = [
        name
        for name in (
            "tool_gates",
            "tool_observers",
            "run_end_guards",
            "dynamic_tools",
            "narrows_tools",
            "narrows_window",
            "stop_conditions",
        )
        if getattr(bound, name)
    ]
    if flags:
        parts.append("+" + ",".join(flags))
    return " ".join(parts) or "(nothing)"


def _plugins_json(found: Discovery) -> dict[str, Any]:
    return {
        "disabled": found.disabled,
        "plugins": [
            {
                "id": pid,
                "version": item.value.manifest.version,
                "distribution": item.distribution,
                "distribution_version": item.dist_version,
                "entry_point": item.source,
                "description": item.value.manifest.description,
                "bound": item.value.manifest.bound.model_dump(mode="json"),
            }
            for pid, item in sorted(found.plugins.items())
        ],
        "tools": [
            {"id": tid, "distribution": item.distribution}
            for tid, item in sorted(found.tools.items())
        ],
        "providers": [
            {"id": pid, "distribution": item.distribution}
            for pid, item in sorted(found.providers.items())
        ],
        "errors": [str(f) for f in found.failures] + [str(d) for d in found.duplicates.values()],
    }


def _cmd_plugins(args: argparse.Namespace) -> int:
    from ..plugins._discovery import DISABLE_ENV, discover

    if args.check:
        from ._check import cmd_check

        return cmd_check(args)
    found = discover()
    if args.json:
        _write(json.dumps(_plugins_json(found), indent=2) + "\n")
        return 1 if found.failures or found.duplicates else 0
    if found.disabled:
        _write(f"plugin discovery is off ({DISABLE_ENV} is set)\n")
        return 0
    if not (found.plugins or found.tools or found.providers or found.failures):
        _write("no plugins installed (entry-point group 'awaken')\n")
    for pid, item in sorted(found.plugins.items()):
        manifest = item.value.manifest
        dist = f"{item.distribution} {item.dist_version}" if item.distribution else item.source
        _write(f"{pid} {manifest.version}  [{dist}]\n")
        if manifest.description:
            _write(f"    {manifest.description}\n")
        _write(f"    bound: {_bound_summary(manifest.bound)}\n")
    for kind in ("tools", "providers"):
        table = getattr(found, kind)
        if table:
            _write(
                f"{kind}: " + ", ".join(f"{i} [{v.distribution}]" for i, v in sorted(table.items()))
            )
            _write("\n")
    problems = [str(f) for f in found.failures] + [str(d) for d in found.duplicates.values()]
    if problems:
        _write("\nload errors:\n")
        for problem in problems:
            _write(f"  ! {problem}\n")
        return 1
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from ._build import cli_runtime

    if args.agent is None and args.model is None:
        sys.stderr.write("awaken run: give --agent FILE or --model PROVIDER/MODEL (or both)\n")
        return 2
    if args.api_base and args.model is None:
        sys.stderr.write("awaken run: --api-base needs --model PROVIDER/MODEL\n")
        return 2
    runtime, agent_id = cli_runtime(args.agent, args.model, args.api_base)
    return _run_stream(runtime, agent_id, args.prompt, args)


def _cmd_resume(args: argparse.Namespace) -> int:
    from ..stores import open_store
    from ._approve import drive_with_terminal, exit_status, read_ticket_file, resume_from_file
    from ._build import cli_runtime

    async def go() -> int:
        saved = read_ticket_file(args.ticket_file)
        ctx = saved.context
        runtime, _agent_id = cli_runtime(ctx.get("agent"), ctx.get("model"), ctx.get("api_base"))
        runtime.store = open_store(args.store or ctx.get("store") or "memory://")

        render = _renderer()
        answer = "deny" if args.deny else ("approve-thread" if args.always else "approve")
        try:
            state = await resume_from_file(runtime, args.ticket_file, answer, on_event=render)
            state = await drive_with_terminal(
                runtime, state, stdin=sys.stdin, stdout=sys.stdout, context=ctx, on_event=render
            )
        finally:
            await _close_store(runtime)
        return exit_status(state)

    try:
        return asyncio.run(go())
    except (OSError, ValueError) as exc:  # an unreadable or malformed ticket file
        sys.stderr.write(f"awaken resume: {exc}\n")
        return 2


def _store_options(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--store",
        help="store URL: sqlite:///path/awaken.db, file:///dir or memory:// "
        f"(default: $AWAKEN_STORE, else {default})",
    )
    parser.add_argument("--thread", help="continue this thread id (default: a new thread)")


def _store_url(args: argparse.Namespace) -> None:
    """Fill ``args.store`` from ``--store``, ``AWAKEN_STORE`` or the command's default."""
    import os

    from ..stores import STORE_ENV, default_store_url

    if getattr(args, "store", None) or args.command not in ("run", "demo"):
        return
    if args.command == "demo":
        args.store = os.environ.get(STORE_ENV) or "memory://"
    else:
        args.store = default_store_url()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``awaken`` command.

    With ``argv`` (the arguments it will parse), the commands other distributions
    add are loaded only as needed: none for a built-in command, only the one named
    for an installed one, so ``awaken run`` does not import every add-on's
    libraries. Without it, or for help or an unknown command, all are loaded.
    """
    parser = argparse.ArgumentParser(
        prog="awaken", description="Awaken: an embeddable agent runtime."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=_VERBOSE_HELP)
    # Also accepted after the subcommand; SUPPRESS keeps a subparser from resetting it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", parents=[common], help="run the offline demo agent (scripted model)"
    )
    demo.add_argument(
        "prompt", nargs="?", help='the user prompt, e.g. "What\'s the weather in Paris?"'
    )
    demo.add_argument(
        "--delay",
        type=float,
        metavar="SECONDS",
        help="pause before each streamed chunk (default: 0.04 on a terminal, 0 when piped)",
    )
    _store_options(demo, "memory:// (nothing kept)")
    demo.set_defaults(func=_cmd_demo)
    plugins = sub.add_parser(
        "plugins", parents=[common], help="list discovered plugins and load errors"
    )
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    plugins.add_argument("--check", action="store_true", help="resolve each with its defaults")
    plugins.set_defaults(func=_cmd_plugins)
    run = sub.add_parser(
        "run", parents=[common], help="run an agent from a TOML/JSON/YAML file or on a model"
    )
    run.add_argument(
        "--agent",
        help="agent file (TOML/JSON/YAML; may hold [[models]] and tools/plugins by "
        "import path, 'module:attribute')",
    )
    run.add_argument(
        "--model",
        metavar="PROVIDER/MODEL",
        help="run on this litellm model (e.g. openai/gpt-4o-mini, ollama_chat/llama3.1); "
        "overrides the agent file's model",
    )
    run.add_argument(
        "--api-base",
        metavar="URL",
        help="base URL of the model's server (e.g. http://localhost:11434 for Ollama)",
    )
    run.add_argument("prompt", help="the user prompt")
    _store_options(run, "SQLite in $XDG_DATA_HOME/awaken/awaken.db")
    run.set_defaults(func=_cmd_run)
    resume = sub.add_parser(
        "resume", parents=[common], help="answer the permission asks saved in a ticket file"
    )
    resume.add_argument("ticket_file", help="the file `awaken run` wrote when it could not ask")
    answer = resume.add_mutually_exclusive_group(required=True)
    answer.add_argument("--approve", action="store_true", help="approve every pending ask")
    answer.add_argument("--deny", action="store_true", help="deny every pending ask")
    resume.add_argument(
        "--always", action="store_true", help="with --approve: remember it for this thread"
    )
    resume.add_argument("--store", help="store URL (default: the one saved in the ticket file)")
    resume.set_defaults(func=_cmd_resume)
    add_new_command(sub)
    _installed_commands(sub, _command_of(argv))
    return parser


def _command_of(argv: Sequence[str] | None) -> str | None:
    """The subcommand ``argv`` names; ``None`` for help, no command or no ``argv``."""
    for word in argv or ():
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word
    return None


def _installed_commands(sub: Any, command: str | None = None) -> None:
    """Subcommands other distributions add (entry points ``awaken.commands``, e.g. ``serve``).

    Each entry point is a function given the subparsers; one that fails to load is
    skipped, so a broken add-on never breaks ``awaken`` itself. An entry point is
    named after the command it adds: for ``command``, a built-in one loads none and
    an installed one only its own (a name no entry point has loads them all).
    """
    from importlib.metadata import entry_points

    if command is not None and command in sub.choices:
        return
    found = entry_points(group="awaken.commands")
    named = [ep for ep in found if ep.name == command]
    for ep in named or found:
        try:
            ep.load()(sub)
        except Exception as exc:
            sys.stderr.write(f"awaken: command {ep.name!r} from {ep.value} failed to load: {exc}\n")


_VERBOSE_HELP = "show tracebacks and info logs (default: one line per problem)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``awaken`` console script."""
    from .._errors import AwakenError
    from ._report import VERBOSE_HINT, setup_logging

    if argv is None:
        argv = sys.argv[1:]
    args = build_parser(argv).parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    setup_logging(verbose)
    try:
        _store_url(args)
        code: int = args.func(args)
    except BrokenPipeError:
        # The reader went away (`awaken demo | head`): stop quietly, like other CLIs.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except AwakenError as exc:  # expected: a bad agent file, store URL, unknown id...
        if verbose:
            traceback.print_exc()
        sys.stderr.write(f"awaken {args.command}: {exc}\n")
        return 2
    except Exception as exc:  # not expected: say what it was, and how to see more
        if verbose:
            traceback.print_exc()
        hint = "" if verbose else f" {VERBOSE_HINT}"
        sys.stderr.write(f"awaken {args.command}: {type(exc).__name__}: {exc}{hint}\n")
        return 1
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
