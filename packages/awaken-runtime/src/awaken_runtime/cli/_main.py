"""The ``awaken`` command: ``demo``, ``plugins``, ``run`` and ``resume``.

Subcommands import what they need when they run, so ``awaken --help`` stays
fast and never imports a model provider library.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._new import add_new_command

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


async def _stream(
    runtime: Runtime, agent_id: str, prompt: str, args: argparse.Namespace | None = None
) -> int:
    from ..lifecycle._failures import Error
    from ..messages._message import new_id
    from ..stores import open_store
    from ._approve import drive_with_terminal, exit_status

    url = getattr(args, "store", None) or "memory://"
    runtime.store = open_store(url)
    thread_id = getattr(args, "thread", None) or new_id("thread_")
    render = _renderer()
    _write(f"user> {prompt}\n")
    try:
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
        _write(f"error: {state.end_cause.failure.message}\n")
    if not url.startswith("memory:"):
        sys.stderr.write(f"thread {thread_id} saved in {url} (continue it with --thread)\n")
    return exit_status(state)


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import DEMO_PROMPT, build_demo_runtime

    _write("awaken demo: a weather agent on a scripted model (offline, no API key)\n\n")
    return _run_stream(build_demo_runtime(), "weather", args.prompt or DEMO_PROMPT, args)


def _run_stream(runtime: Runtime, agent_id: str, prompt: str, args: argparse.Namespace) -> int:
    from .._errors import AwakenError

    try:
        return asyncio.run(_stream(runtime, agent_id, prompt, args))
    except AwakenError as exc:
        sys.stderr.write(f"awaken {args.command}: {exc}\n")
        return 2


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


def _cli_runtime(agent: str | None, model: str | None, api_base: str | None) -> tuple[Runtime, str]:
    """The runtime ``awaken run`` uses for an agent file and/or a litellm model."""
    from ..agents._config import AgentConfig
    from ..models._model import ModelSpec
    from ..models._scripted import ScriptedExecutor
    from ..models.litellm._executor import LITELLM_PROVIDER, LiteLLMExecutor, litellm_pricing
    from ..runtime._builder import AgentRuntimeBuilder

    builder = AgentRuntimeBuilder()
    if agent is not None:
        config = AgentConfig.from_file(agent)
        for spec in _models_in_file(agent):
            builder.with_model(ModelSpec.model_validate(spec))
    else:
        config = AgentConfig(
            id="cli", instructions="You are a helpful assistant.", model_binding=str(model)
        )
    if model is not None:
        # --model binds the agent to a litellm model (litellm's PROVIDER/MODEL name),
        # priced from litellm's local table when it knows the model.
        builder.with_model(
            ModelSpec(
                id=f"cli:{model}",
                provider=LITELLM_PROVIDER,
                model=model,
                api_base=api_base,
                pricing=litellm_pricing(model),
            )
        )
        config = config.model_copy(update={"model_binding": f"cli:{model}"})
    builder.with_agent_spec(config)
    builder.with_provider(LITELLM_PROVIDER, LiteLLMExecutor())
    # A built-in offline provider so an agent file can be tried without any key.
    builder.with_provider("echo", ScriptedExecutor([_echo], repeat=True, chunk_size=8))
    runtime = builder.build()
    runtime.resolve(config.id)
    return runtime, config.id


def _cmd_run(args: argparse.Namespace) -> int:
    from .._errors import AwakenError

    if args.agent is None and args.model is None:
        sys.stderr.write("awaken run: give --agent FILE or --model PROVIDER/MODEL (or both)\n")
        return 2
    if args.api_base and args.model is None:
        sys.stderr.write("awaken run: --api-base needs --model PROVIDER/MODEL\n")
        return 2
    try:
        runtime, agent_id = _cli_runtime(args.agent, args.model, args.api_base)
    except AwakenError as exc:
        sys.stderr.write(f"awaken run: {exc}\n")
        return 2
    return _run_stream(runtime, agent_id, args.prompt, args)


def _cmd_resume(args: argparse.Namespace) -> int:
    from .._errors import AwakenError
    from ..stores import open_store
    from ._approve import drive_with_terminal, exit_status, read_ticket_file, resume_from_file

    async def go() -> int:
        saved = read_ticket_file(args.ticket_file)
        ctx = saved.context
        runtime, _agent_id = _cli_runtime(ctx.get("agent"), ctx.get("model"), ctx.get("api_base"))
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
    except (AwakenError, OSError, ValueError) as exc:
        sys.stderr.write(f"awaken resume: {exc}\n")
        return 2


def _echo(request: Any) -> str:
    last = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    return f"(echo) {last}"


def _models_in_file(path: str) -> list[dict[str, Any]]:
    import tomllib
    from pathlib import Path

    p = Path(path)
    if p.suffix.lower() == ".toml":
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    elif p.suffix.lower() == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
    else:
        import yaml

        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    models = data.get("models", []) if isinstance(data, dict) else []
    return list(models)


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``awaken`` command."""
    parser = argparse.ArgumentParser(
        prog="awaken", description="Awaken: an embeddable agent runtime."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the offline demo agent (scripted model)")
    demo.add_argument("prompt", nargs="?", help="the user prompt (default: a weather question)")
    _store_options(demo, "memory:// (nothing kept)")
    demo.set_defaults(func=_cmd_demo)
    plugins = sub.add_parser("plugins", help="list discovered plugins and load errors")
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    plugins.add_argument("--check", action="store_true", help="resolve each with its defaults")
    plugins.set_defaults(func=_cmd_plugins)
    run = sub.add_parser("run", help="run an agent from a TOML/JSON/YAML file or on a model")
    run.add_argument("--agent", help="agent file (may also hold [[models]])")
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
    resume = sub.add_parser("resume", help="answer the permission asks saved in a ticket file")
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
    _installed_commands(sub)
    return parser


def _installed_commands(sub: Any) -> None:
    """Subcommands other distributions add (entry points ``awaken.commands``, e.g. ``serve``).

    Each entry point is a function given the subparsers; one that fails to load is
    skipped, so a broken add-on never breaks ``awaken`` itself.
    """
    from importlib.metadata import entry_points

    for ep in entry_points(group="awaken.commands"):
        try:
            ep.load()(sub)
        except Exception as exc:
            sys.stderr.write(f"awaken: command {ep.name!r} from {ep.value} failed to load: {exc}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``awaken`` console script."""
    args = build_parser().parse_args(argv)
    _store_url(args)
    try:
        code: int = args.func(args)
    except BrokenPipeError:
        # The reader went away (`awaken demo | head`): stop quietly, like other CLIs.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
