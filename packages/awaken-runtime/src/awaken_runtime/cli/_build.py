"""The runtime ``awaken run`` and ``awaken resume`` build from an agent file and/or a model."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runtime._runtime import Runtime

__all__ = ["cli_runtime", "echo", "models_in_file"]


def echo(request: Any) -> str:
    """The built-in offline ``echo`` model: it answers with the last user message."""
    last = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    return f"(echo) {last}"


def models_in_file(path: str) -> list[dict[str, Any]]:
    """The raw ``[[models]]`` entries of an agent file (awaken-server reads them too)."""
    from ..agents._file import read_agent_data

    models = read_agent_data(path).get("models", [])
    return list(models) if isinstance(models, list) else []


def cli_runtime(agent: str | None, model: str | None, api_base: str | None) -> tuple[Runtime, str]:
    """A runtime holding the agent of ``agent`` (a file) and/or a litellm ``model``.

    The file's ``[[models]]`` and the tools and plugins it names by import path
    are registered next to the agent; the current directory is importable, as
    with ``python -m``, after the agent file's own folder.
    """
    from ..agents._config import AgentConfig
    from ..agents._file import AgentFile
    from ..models._model import ModelSpec
    from ..models._scripted import ScriptedExecutor
    from ..models.litellm._executor import LITELLM_PROVIDER, LiteLLMExecutor, litellm_pricing
    from ..runtime._builder import AgentRuntimeBuilder

    builder = AgentRuntimeBuilder()
    if agent is not None:
        if os.getcwd() not in sys.path:
            # A console script's sys.path starts at its bin/ folder, not where the user is.
            sys.path.insert(0, os.getcwd())
        loaded = AgentFile.load(agent)
        config = loaded.config
        loaded.register_parts(builder)
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
    builder.with_provider("echo", ScriptedExecutor([echo], repeat=True, chunk_size=8))
    runtime = builder.build()
    runtime.resolve(config.id)
    return runtime, config.id
