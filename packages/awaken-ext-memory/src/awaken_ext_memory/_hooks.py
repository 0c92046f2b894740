"""Entry point module (``[project.entry-points.awaken] memory``): registers the plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from awaken_runtime.hookspecs import hookimpl

__all__ = ["register_plugins"]


@hookimpl
def register_plugins(register: Callable[[Any], None]) -> None:
    """Register one :class:`MemoryPlugin` (id ``memory``) with default settings."""
    from ._plugin import MemoryPlugin

    register(MemoryPlugin())
