"""Python objects named by import path (``"myapp.tools:get_time"``) in agent files."""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any

from .._errors import AgentConfigError
from ..models._output import OutputSpec
from ..plugins._plugin import Plugin
from ..tools._function_tool import FunctionTool
from ..tools._tool import Tool

__all__ = ["import_output", "import_plugin", "import_tool", "is_import_path"]


def is_import_path(ref: str) -> bool:
    """Whether an id in ``tool_ids``/``plugin_ids`` is an import path.

    Tool and plugin ids never contain ``:``, so the colon of uvicorn's
    ``module:attribute`` form tells the two apart.
    """
    return ":" in ref


def _found(obj: Any) -> str:
    if inspect.ismodule(obj):
        return f"module {obj.__name__!r}"
    if inspect.isclass(obj):
        return f"class {obj.__qualname__!r}"
    if inspect.isfunction(obj):
        return f"function {obj.__qualname__!r}"
    return f"{type(obj).__name__} object {obj!r:.60}"


def _import(path: str, source: str) -> Any:
    module_name, _, attr = path.partition(":")
    where = f"import path {path!r} in {source}"
    if not module_name or not attr or ":" in attr:
        raise AgentConfigError(
            f"{where}: write it as 'module:attribute', e.g. 'myapp.tools:get_time'"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            searched = ", ".join(repr(p) for p in sys.path[:3] if p)
            raise AgentConfigError(
                f"{where}: no module named {exc.name!r} (searched the agent file's folder, "
                f"the current directory and installed packages, first: {searched}); "
                f"check the spelling or install it"
            ) from None
        raise AgentConfigError(f"{where}: importing {module_name!r} failed: {exc}") from None
    except Exception as exc:  # the user's module raised while it was imported
        raise AgentConfigError(
            f"{where}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for i, part in enumerate(attr.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            owner = module_name + "".join(f".{p}" for p in attr.split(".")[:i])
            public = sorted(n for n in dir(obj) if not n.startswith("_"))[:12]
            has = ", ".join(public) if public else "no public names"
            raise AgentConfigError(
                f"{where}: {owner!r} has no attribute {part!r} (it has: {has})"
            ) from None
    return obj


def import_tool(path: str, *, source: str) -> Tool:
    """The tool at ``path``: a ``Tool`` object, or a plain function wrapped like ``@tool``."""
    obj = _import(path, source)
    if isinstance(obj, Tool):
        return obj
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        try:
            return FunctionTool(obj)
        except Exception as exc:  # a signature the schema builder refuses
            raise AgentConfigError(
                f"import path {path!r} in {source}: function {obj.__qualname__!r} cannot be a "
                f"tool: {exc}"
            ) from None
    raise AgentConfigError(
        f"import path {path!r} in {source}: found {_found(obj)}, expected a tool "
        f"(a function, a @tool function or a Tool object)"
    )


def import_plugin(path: str, *, source: str) -> Plugin:
    """The plugin at ``path``: a ``Plugin`` object, or a class instantiated without arguments."""
    obj = _import(path, source)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise AgentConfigError(
                f"import path {path!r} in {source}: class {obj.__qualname__!r} could not be "
                f"created without arguments ({type(exc).__name__}: {exc}); point the path at "
                f"an instance instead"
            ) from None
    if isinstance(obj, Plugin):
        return obj
    raise AgentConfigError(
        f"import path {path!r} in {source}: found {_found(obj)}, expected a plugin "
        f"(an object with a manifest and resolve(config), or its class)"
    )


def import_output(path: str, options: dict[str, Any], *, source: str) -> OutputSpec:
    """The output spec of the type at ``path`` (a pydantic model, dataclass, TypedDict,
    or anything pydantic validates); ``options`` are the spec's other keys."""
    obj = _import(path, source)
    try:
        return OutputSpec.of(obj, **options)
    except Exception as exc:  # not a type pydantic can make a schema of, or a bad option
        raise AgentConfigError(
            f"import path {path!r} in {source}: found {_found(obj)}, which is not an output "
            f"type ({type(exc).__name__}: {exc}); point it at a pydantic model, dataclass "
            f"or TypedDict"
        ) from None
