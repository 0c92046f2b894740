"""Entry point module (``awaken`` group): publishes :class:`PermissionsPlugin`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from awaken_runtime.hookspecs import hookimpl

from ._plugin import PermissionsPlugin

__all__ = ["register_plugins"]


@hookimpl
def register_plugins(register: Callable[[Any], None]) -> None:
    """Register the ``permissions`` plugin (enabled only for agents that list it)."""
    register(PermissionsPlugin())
