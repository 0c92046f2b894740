"""awaken-runtime's own ``awaken`` entry point: providers that ship with the core.

Registering the LiteLLM provider here costs nothing at discovery: the
executor imports litellm only when it first runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...hookspecs import hookimpl
from ._executor import LITELLM_PROVIDER, LiteLLMExecutor

__all__ = ["register_providers"]


@hookimpl
def register_providers(register: Callable[[str, Any], None]) -> None:
    """Register the ``litellm`` provider (needs ``awaken-runtime[litellm]`` to run)."""
    register(LITELLM_PROVIDER, LiteLLMExecutor())
