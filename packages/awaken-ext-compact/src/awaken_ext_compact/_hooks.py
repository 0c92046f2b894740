"""Entry point module (``[project.entry-points.awaken] compact``): registers the plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from awaken_runtime.hookspecs import hookimpl

__all__ = ["register_plugins"]


@hookimpl
def register_plugins(register: Callable[[Any], None]) -> None:
    """Register one :class:`CompactPlugin` (id ``compact``)."""
    from ._plugin import CompactPlugin

    register(CompactPlugin())
