"""Finding plugins, tools and providers that installed distributions publish.

Every entry point of the ``awaken`` group names a module implementing hooks
from :mod:`awaken_runtime.hookspecs`, or directly one plugin: a class
(``my_pkg:MyPlugin``, created without arguments) or object. Modules are loaded lazily, once per
process. Each entry point is isolated: if its import, its hook validation or
one of its hooks raises, everything it registered is dropped, the failure is
recorded (``awaken plugins`` lists it) and the other entry points are
unaffected. An id registered by two entry points is kept by neither; the
conflict is recorded and resolving an agent that names the id reports it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

from .. import hookspecs
from .._errors import DuplicateIdError, PluginLoadError
from ..tools._tool import Tool
from ._plugin import Plugin

if TYPE_CHECKING:
    from importlib import metadata

__all__ = ["Discovered", "Discovery", "discover"]

DISABLE_ENV = "AWAKEN_DISABLE_PLUGINS"
"""Comma list of entry-point or distribution names to skip; ``*`` or ``all`` skips all."""

_HOOKS = ("register_plugins", "register_tools", "register_providers", "register_skills")
_KEYED = {"register_plugins", "register_tools", "register_providers"}


@dataclass(frozen=True, slots=True)
class Discovered:
    """One registered item and where it came from."""

    value: Any
    source: str
    distribution: str | None
    dist_version: str | None


@dataclass(slots=True)
class Discovery:
    """The outcome of scanning the ``awaken`` entry-point group."""

    plugins: dict[str, Discovered] = field(default_factory=dict)
    tools: dict[str, Discovered] = field(default_factory=dict)
    providers: dict[str, Discovered] = field(default_factory=dict)
    failures: list[PluginLoadError] = field(default_factory=list)
    duplicates: dict[tuple[str, str], DuplicateIdError] = field(default_factory=dict)
    extras: dict[str, list[Discovered]] = field(default_factory=dict)
    """Values registered through hooks the runtime does not interpret (e.g. skills)."""
    disabled: bool = False

    def failure_for(self, item_id: str) -> PluginLoadError | None:
        """The load failure of an entry point or distribution named like ``item_id``."""
        for failure in self.failures:
            names = {failure.source, failure.distribution or ""}
            if item_id in names or item_id.replace("-", "_") in names:
                return failure
        return None


def _disabled_names() -> tuple[bool, set[str]]:
    raw = os.environ.get(DISABLE_ENV, "").strip()
    if raw.lower() in ("*", "all", "1", "true", "yes"):
        return True, set()
    return False, {n.strip() for n in raw.split(",") if n.strip()}


def _dist_of(ep: metadata.EntryPoint) -> tuple[str | None, str | None]:
    dist = ep.dist
    if dist is None:
        return None, None
    return dist.metadata["Name"], dist.version


def _scan(entry_points: list[metadata.EntryPoint]) -> Discovery:
    all_off, skip = _disabled_names()
    found = Discovery(disabled=all_off)
    if all_off:
        return found
    pm = pluggy.PluginManager("awaken")
    pm.add_hookspecs(hookspecs)
    owners: dict[tuple[str, str], str] = {}
    for ep in sorted(entry_points, key=lambda e: e.name):
        dist_name, dist_version = _dist_of(ep)
        if ep.name in skip or (dist_name is not None and dist_name in skip):
            continue
        label = dist_name or ep.name
        staged: list[tuple[str, str, Any]] = []
        try:
            loaded = ep.load()
            direct = _direct_plugin(ep, loaded)
            if direct is not None:
                staged.append(("plugins", direct.manifest.id, direct))
            else:
                pm.register(loaded, name=f"{ep.name}@{label}")
                _run_hooks(pm, loaded, staged)
        except Exception as exc:  # isolate every entry point from the others
            found.failures.append(PluginLoadError(ep.name, dist_name, exc))
            continue
        for kind, item_id, value in staged:
            if kind not in ("plugins", "tools", "providers"):
                found.extras.setdefault(kind, []).append(
                    Discovered(value, ep.name, dist_name, dist_version)
                )
                continue
            registry = getattr(found, kind)
            key = (kind, item_id)
            if key in found.duplicates:
                continue
            if item_id in registry:
                found.duplicates[key] = DuplicateIdError(
                    kind.rstrip("s"), item_id, owners[key], label
                )
                del registry[item_id]
                continue
            owners[key] = label
            registry[item_id] = Discovered(value, ep.name, dist_name, dist_version)
    return found


def _run_hooks(pm: pluggy.PluginManager, module: Any, staged: list[tuple[str, str, Any]]) -> None:
    for caller in pm.get_hookcallers(module) or ():
        if not caller.has_spec():
            raise TypeError(
                f"module {module.__name__!r} implements {caller.name!r}, which is not "
                f"an awaken hook; known hooks: {', '.join(_HOOKS)}"
            )
    for hook_name in _HOOKS:
        caller = getattr(pm.hook, hook_name)
        for impl in caller.get_hookimpls():
            if impl.plugin is module:
                impl.function(register=_recorder(hook_name, staged))


def _direct_plugin(ep: metadata.EntryPoint, loaded: Any) -> Plugin | None:
    """The plugin an entry point names directly (``pkg.mod:MyPlugin``), else ``None``.

    A class is instantiated without arguments; a module goes through the hooks.
    """
    if not ep.attr:
        return None
    if isinstance(loaded, type):
        try:
            loaded = loaded()
        except TypeError as exc:
            raise TypeError(
                f"entry point {ep.value!r} names class {loaded.__qualname__}, which cannot be "
                f"created without arguments ({exc}); name an instance or a hooks module instead"
            ) from None
    if not isinstance(loaded, Plugin):
        raise TypeError(
            f"entry point {ep.value!r} names {loaded!r}, which is neither a hooks module nor a "
            f"plugin (a class or object with manifest and resolve)"
        )
    return loaded


def _recorder(hook_name: str, staged: list[tuple[str, str, Any]]) -> Callable[..., None]:
    if hook_name not in _KEYED:

        def register_extra(value: Any) -> None:
            staged.append((hook_name, "", value))

        return register_extra
    if hook_name == "register_plugins":

        def register_plugin(plugin: Any) -> None:
            if not isinstance(plugin, Plugin):
                raise TypeError(
                    f"register_plugins got {plugin!r}, which has no manifest/resolve; "
                    f"register an object implementing awaken_runtime.Plugin"
                )
            staged.append(("plugins", plugin.manifest.id, plugin))

        return register_plugin
    if hook_name == "register_tools":

        def register_tool(tool: Any) -> None:
            if not isinstance(tool, Tool):
                raise TypeError(
                    f"register_tools got {tool!r}, which has no descriptor/call; "
                    f"register an awaken_runtime.Tool (for example made with @tool)"
                )
            staged.append(("tools", tool.descriptor.id, tool))

        return register_tool

    def register_provider(provider_id: str, executor: Any) -> None:
        if not hasattr(executor, "stream"):
            raise TypeError(
                f"register_providers got {executor!r} for {provider_id!r}, which has no "
                f"stream(request) method; register an awaken_runtime.LlmExecutor"
            )
        staged.append(("providers", provider_id, executor))

    return register_provider


_lock = threading.Lock()
_cache: Discovery | None = None


def discover(*, refresh: bool = False) -> Discovery:
    """Scan the ``awaken`` entry-point group (once per process unless ``refresh``)."""
    global _cache
    from importlib import metadata  # loads email & co: only when discovery runs

    with _lock:
        if _cache is None or refresh:
            _cache = _scan(list(metadata.entry_points(group="awaken")))
        return _cache
