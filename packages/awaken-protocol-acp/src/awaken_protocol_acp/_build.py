"""The runtime ``awaken acp`` serves: one agent file (``awaken run`` format), a store, a setup."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from awaken_runtime import (
    AgentConfigError,
    AgentFile,
    AgentRuntimeBuilder,
    LiteLLMExecutor,
    Runtime,
    ScriptedExecutor,
)
from awaken_runtime.stores import open_store

__all__ = ["SetupHook", "build_runtime", "load_setup"]

SetupHook = Callable[[AgentRuntimeBuilder], None]
"""``--setup MODULE:FUNCTION``: adds tools, providers or plugins before the build."""


def _echo(request: object) -> str:
    # `awaken run`'s offline echo model, read from the runtime's CLI so both commands
    # answer alike (the same private reach awaken-server makes).
    from awaken_runtime.cli._main import _echo as echo

    return echo(request)


def load_setup(spec: str) -> SetupHook:
    """Import ``MODULE:FUNCTION`` for ``--setup``; ``AgentConfigError`` naming what is wrong."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentConfigError(f"--setup {spec!r}: write MODULE:FUNCTION (e.g. myapp.awaken:setup)")
    if os.getcwd() not in sys.path:
        # A console script's sys.path starts at its bin/ folder, not where the user is.
        sys.path.insert(0, os.getcwd())
    try:
        hook = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise AgentConfigError(f"--setup {spec!r}: {exc}") from None
    if not callable(hook):
        raise AgentConfigError(f"--setup {spec!r} is not callable")
    return hook  # type: ignore[no-any-return]


def build_runtime(
    agent_file: str | Path, store_url: str, setup: SetupHook | None = None
) -> tuple[Runtime, str]:
    """The runtime over ``store_url`` holding the agent of ``agent_file``, and its id.

    The file's ``[[models]]`` and the tools and plugins it names by import path
    are registered as ``awaken run`` does; the providers are litellm and the
    offline ``echo``, then ``setup`` may add more (a scripted model in tests).
    Raises ``AgentConfigError`` for a bad file or an agent that does not resolve.
    """
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    loaded = AgentFile.load(agent_file)
    builder = AgentRuntimeBuilder().with_store(open_store(store_url))
    loaded.register_parts(builder)
    builder.with_provider("litellm", LiteLLMExecutor())
    builder.with_provider("echo", ScriptedExecutor([_echo], repeat=True, chunk_size=8))
    if setup is not None:
        setup(builder)
    builder.with_agent_spec(loaded.config)
    runtime = builder.build()
    runtime.resolve(loaded.config.id)  # a missing model or tool fails here, before serving
    return runtime, loaded.config.id
