"""Hook specifications for distributions that extend awaken.

A distribution publishes a module under the ``awaken`` entry-point group::

    [project.entry-points.awaken]
    my-plugin = "my_package.awaken_hooks"

and implements any of these hooks in that module with :data:`hookimpl`.
Each hook receives a ``register`` callback, so the runtime knows which
distribution registered what::

    from awaken_runtime.hookspecs import hookimpl

    @hookimpl
    def register_plugins(register):
        register(MyPlugin())
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

__all__ = [
    "hookimpl",
    "hookspec",
    "register_plugins",
    "register_providers",
    "register_skills",
    "register_tools",
]

hookspec = pluggy.HookspecMarker("awaken")
"""Marker for awaken hook specifications."""
hookimpl = pluggy.HookimplMarker("awaken")
"""Marker for implementations of awaken hooks in a plugin module."""


@hookspec
def register_plugins(register: Callable[[Any], None]) -> None:
    """Register plugins: call ``register(plugin)`` for each ``Plugin`` object."""


@hookspec
def register_tools(register: Callable[[Any], None]) -> None:
    """Register tools: call ``register(tool)`` for each ``Tool`` object."""


@hookspec
def register_providers(register: Callable[[str, Any], None]) -> None:
    """Register model providers: call ``register(provider_id, executor)``."""


@hookspec
def register_skills(register: Callable[[Any], None]) -> None:
    """Register skill packs: call ``register(path)`` with a folder of skill folders.

    The runtime only records what was registered (``Discovery.extras``); the
    skills extension reads and validates it.
    """
