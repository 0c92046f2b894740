"""A module imported when one of its names is first read, then read at attribute speed.

The run imports what a plain run never uses (the event classes, the gate
decisions) only where it is used, so that the first run in a process does
not pay for it. A function-level ``from x import y`` costs about 0.8 us on
every call (CPython 3.11): per step and per event that adds up. A
:class:`LazyModule` imports its module on the first attribute read and copies
the module's names into itself, so later reads are plain attribute lookups.

Declare it beside a ``TYPE_CHECKING`` import of the same module, so type
checkers see the module itself::

    if TYPE_CHECKING:
        from ..lifecycle import _events as events
    else:
        events = LazyModule("awaken_runtime.lifecycle._events")
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LazyModule", "lazy_names"]


class LazyModule:
    """Stands for the module ``name`` until first read, then holds its names."""

    def __init__(self, name: str) -> None:
        self.__dict__["__lazy_name__"] = name

    def __getattr__(self, attr: str) -> Any:
        # Only reached for names not copied yet: the first read, or a name the module lacks.
        module = importlib.import_module(self.__dict__["__lazy_name__"])
        self.__dict__.update(vars(module))
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<LazyModule {self.__dict__['__lazy_name__']!r}>"


def lazy_names(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) for names imported on first read.

    ``homes`` maps each lazy name to the submodule defining it (relative to
    ``package``, e.g. ``"._app"``). ``awaken_runtime`` and its ``stores`` use it
    so that importing them stays light, and the first-party add-ons so that the
    ``awaken`` command and plugin discovery, which import them, do not import
    their libraries too::

        __getattr__, __dir__ = lazy_names(__name__, _HOMES)
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
