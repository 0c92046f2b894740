"""Entry point (group ``awaken``): registers the ``mcp`` plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from awaken_runtime.hookspecs import hookimpl

from ._plugin import McpPlugin

__all__ = ["register_plugins"]


@hookimpl
def register_plugins(register: Callable[[Any], None]) -> None:
    """Register an :class:`McpPlugin` without servers of its own (agents declare them)."""
    register(McpPlugin())
