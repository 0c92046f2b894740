"""``PluginBase``: a plugin written as one class, its bound derived from what it declares.

Hooks are methods marked with :func:`phase_hook`, :func:`tool_gate`,
:func:`tool_observer`, :func:`run_end_guard`, :func:`stop_condition`,
:func:`tool_source`, :func:`effect_handler` or :func:`action_handler`; tools and
state keys are class attributes. When the class statement runs,
``__init_subclass__`` collects them once and builds the class's
``manifest`` (with its ``CapabilityBound``), so nothing is said twice and
``awaken plugins`` shows the bound before any agent resolves. The bound is
still static and still enforced at resolve and at every commit: declaring a
hook for ``STEP_END`` is what lets the plugin hook ``STEP_END``, and a hook
that writes a key no ``StateKey`` attribute names is still refused at commit.

Each agent that enables the plugin gets a shallow copy of the registered
object with ``self.config`` set to that agent's validated config.
"""

from __future__ import annotations

import copy
import difflib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from .._errors import PluginDefinitionError
from ..state._engine import Command
from ..state._state_key import StateKey, StateKeyDecl
from ..tools._function_tool import tool as make_tool
from ..tools._tool import Tool
from ._context import Band
from ._plugin import CapabilityBound, Contributions, HookReaction, PluginManifest
from ._points import PhaseHookPoint

__all__ = [
    "PluginBase",
    "action_handler",
    "effect_handler",
    "phase_hook",
    "run_end_guard",
    "stop_condition",
    "tool_gate",
    "tool_observer",
    "tool_source",
]

F = TypeVar("F", bound=Callable[..., Any])

_ROLE = "__awaken_roles__"
# role -> the CapabilityBound flag it needs (phase hooks and handlers are sets instead)
_FLAGS = {
    "tool_gate": "tool_gates",
    "tool_observer": "tool_observers",
    "run_end_guard": "run_end_guards",
    "stop_condition": "stop_conditions",
    "tool_source": "dynamic_tools",
}


def _mark(fn: F, role: str, arg: str = "") -> F:
    roles = list(getattr(fn, _ROLE, ()))
    roles.append((role, arg))
    setattr(fn, _ROLE, tuple(roles))
    return fn


def _point(value: PhaseHookPoint | str) -> PhaseHookPoint:
    try:
        return PhaseHookPoint(value)
    except ValueError:
        pass
    names = {p.name: p for p in PhaseHookPoint}
    if isinstance(value, str) and value in names:
        return names[value]
    valid = ", ".join(f"PhaseHookPoint.{p.name}" for p in PhaseHookPoint)
    squashed = {p.value.replace("_", ""): p for p in PhaseHookPoint}
    guess = difflib.get_close_matches(str(value).replace("_", "").lower(), list(squashed), n=1)
    hint = f" (did you mean PhaseHookPoint.{squashed[guess[0]].name}?)" if guess else ""
    raise PluginDefinitionError(f"unknown hook point {value!r}{hint}; hook points are {valid}")


def phase_hook(point: PhaseHookPoint | str) -> Callable[[F], F]:
    """Mark a method as the hook of ``point`` (declares ``phase_hooks={point}``).

    The method takes ``(self, ctx: PhaseContext)``, may be sync or async, and
    returns ``None``, a :class:`HookReaction`, one :class:`Command` or a list
    of commands. Stack the decorator to hook several points.
    """
    checked = _point(point)
    return lambda fn: _mark(fn, "phase_hook", checked.value)


def tool_gate(fn: F) -> F:
    """Mark ``(self, ctx, call) -> GateDecision | None`` as a tool gate (``tool_gates``)."""
    return _mark(fn, "tool_gate")


def tool_observer(fn: F) -> F:
    """Mark ``(self, ctx)`` as a BeforeToolExecute observer (``tool_observers``)."""
    return _mark(fn, "tool_observer")


def run_end_guard(fn: F) -> F:
    """Mark ``(self, ctx) -> Complete | Steer | None`` as a run-end guard (``run_end_guards``)."""
    return _mark(fn, "run_end_guard")


def stop_condition(fn: F) -> F:
    """Mark ``(self, ctx) -> str | None`` as a stop condition (``stop_conditions``)."""
    return _mark(fn, "stop_condition")


def tool_source(fn: F) -> F:
    """Mark ``(self) -> Sequence[Tool]`` as a source of run-time tools (``dynamic_tools``)."""
    return _mark(fn, "tool_source")


def effect_handler(name: str) -> Callable[[F], F]:
    """Mark ``async (self, effect, ctx)`` as the handler of effect ``name``."""
    return lambda fn: _mark(fn, "effect_handler", name)


def action_handler(name: str) -> Callable[[F], F]:
    """Mark ``(self, action, ctx)`` as the handler of scheduled action ``name``."""
    return lambda fn: _mark(fn, "action_handler", name)


@dataclass(slots=True)
class _Declared:
    tools: tuple[Tool, ...] = ()
    keys: tuple[StateKeyDecl, ...] = ()
    roles: list[tuple[str, str, str]] = field(default_factory=list)
    """``(role, argument, method name)`` in definition order."""


def _reaction(result: Any, where: str) -> HookReaction | None:
    if result is None or isinstance(result, HookReaction):
        return result
    if isinstance(result, Command):
        return HookReaction(commands=[result])
    if isinstance(result, Iterable) and not isinstance(result, (str, bytes, dict)):
        commands = list(result)
        if all(isinstance(c, Command) for c in commands):
            return HookReaction(commands=commands)
    raise TypeError(
        f"{where} returned {result!r}; return None, a HookReaction, a Command or a list of Commands"
    )


def _as_hook(method: Callable[..., Any], where: str) -> Callable[..., Any]:
    async def hook(*args: Any) -> HookReaction | None:
        result = method(*args)
        if inspect.isawaitable(result):
            result = await result
        return _reaction(result, where)

    hook.__qualname__ = where
    return hook


def _tools(cls: type, raw: Any) -> tuple[Tool, ...]:
    if isinstance(raw, (Tool, str)) or callable(raw) or not isinstance(raw, Iterable):
        raise PluginDefinitionError(
            f"{cls.__qualname__}.tools must be a list of tools, got {raw!r}; "
            f"write tools = [my_tool]"
        )
    built: dict[str, Tool] = {}
    for item in raw:
        if not isinstance(item, Tool):
            if not callable(item):
                raise PluginDefinitionError(
                    f"{cls.__qualname__}.tools holds {item!r}, which is neither a Tool nor a "
                    f"function; decorate it with @tool"
                )
            item = make_tool(item)
        tid = item.descriptor.id
        if tid in built:
            raise PluginDefinitionError(f"{cls.__qualname__}.tools lists tool {tid!r} twice")
        built[tid] = item
    return tuple(built.values())


def _collect(cls: type) -> _Declared:
    namespace: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        namespace.update(vars(klass))
    declared = _Declared(tools=_tools(cls, namespace.get("tools", ())))
    keys: dict[tuple[str, str], StateKeyDecl] = {}
    for value in namespace.values():
        if isinstance(value, StateKey):
            keys[(value.scope.value, value.key)] = value.decl
    for raw in namespace.get("state_keys", ()):
        decl = CapabilityBound(state_keys=[raw]).state_keys
        for d in decl:
            keys[(d.scope.value, d.key)] = d
    declared.keys = tuple(keys.values())
    handled: dict[tuple[str, str], str] = {}
    for name, value in namespace.items():
        for role, arg in getattr(value, _ROLE, ()):
            if role in ("effect_handler", "action_handler"):
                other = handled.setdefault((role, arg), name)
                if other != name:
                    raise PluginDefinitionError(
                        f"{cls.__qualname__}: {other} and {name} both handle {role[:-8]} "
                        f"{arg!r}; a name has exactly one handler"
                    )
            declared.roles.append((role, arg, name))
    return declared


def _bound(cls: type, declared: _Declared) -> CapabilityBound:
    roles = {role for role, _, _ in declared.roles}
    try:
        return CapabilityBound(
            tool_ids=frozenset(t.descriptor.id for t in declared.tools),
            state_keys=frozenset(declared.keys),
            phase_hooks=frozenset(
                PhaseHookPoint(arg) for role, arg, _ in declared.roles if role == "phase_hook"
            ),
            effect_handlers=frozenset(a for r, a, _ in declared.roles if r == "effect_handler"),
            action_handlers=frozenset(a for r, a, _ in declared.roles if r == "action_handler"),
            context_bands=frozenset(Band(b) for b in getattr(cls, "context_bands", ())),
            inference_params=frozenset(getattr(cls, "inference_params", ())),
            narrows_tools=bool(getattr(cls, "narrows_tools", False)),
            narrows_window=bool(getattr(cls, "narrows_window", False)),
            **{flag: role in roles for role, flag in _FLAGS.items()},
        )
    except (ValueError, ValidationError) as exc:
        raise PluginDefinitionError(f"{cls.__qualname__}: invalid declaration: {exc}") from None


class PluginBase:
    """Base class of a declarative plugin; see the module docstring.

    Class keywords: ``id`` (kebab-case, required), ``version``,
    ``description`` (default: the class docstring's first paragraph).
    Optional class attributes: ``config_model`` (a pydantic model),
    ``tools``, ``state_keys`` (extra ``"scope:key"`` strings or
    ``StateKeyDecl``; every ``StateKey`` attribute is declared anyway),
    ``context_bands``, ``inference_params``, ``narrows_tools``,
    ``narrows_window`` and ``inherit`` (apply to sub-agents too).
    """

    manifest: ClassVar[PluginManifest]
    """Built once, when the class is defined."""
    config_model: ClassVar[type[BaseModel] | None] = None
    inherit: ClassVar[bool] = False
    config: Any = None
    """The validated config of the agent this copy was resolved for."""

    def __init_subclass__(
        cls, *, id: str, version: str = "0.0.0", description: str | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        model = cls.config_model
        if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise PluginDefinitionError(
                f"{cls.__qualname__}.config_model must be a pydantic BaseModel subclass, got "
                f"{model!r}"
            )
        declared = _collect(cls)
        if description is None:
            doc = inspect.getdoc(cls) if "__doc__" in vars(cls) and cls.__doc__ else ""
            description = (doc or "").split("\n\n")[0].replace("\n", " ").strip()
        try:
            manifest = PluginManifest(
                id=id,
                version=version,
                description=description,
                config_model=model,
                bound=_bound(cls, declared),
            )
        except ValidationError as exc:
            raise PluginDefinitionError(
                f"{cls.__qualname__}: plugin id {id!r} is not valid ({exc.errors()[0]['msg']}); "
                f"use lowercase kebab-case such as 'my-plugin'"
            ) from None
        cls.manifest = manifest
        cls.__awaken_declared__ = declared  # type: ignore[attr-defined]

    def resolve(self, config: Any) -> Contributions:
        """Contributions of one agent: the declared tools and keys, hooks bound to a copy."""
        declared: _Declared = type(self).__awaken_declared__  # type: ignore[attr-defined]
        this = copy.copy(self)
        this.config = config
        hooks: dict[PhaseHookPoint, list[Any]] = {}
        by_role: dict[str, list[Any]] = {}
        handlers: dict[str, dict[str, Any]] = {"effect_handler": {}, "action_handler": {}}
        for role, arg, name in declared.roles:
            method = getattr(this, name)
            where = f"{type(self).__qualname__}.{name}"
            if role == "phase_hook":
                hooks.setdefault(PhaseHookPoint(arg), []).append(_as_hook(method, where))
            elif role == "effect_handler":
                handlers[role][arg] = method
            elif role in ("action_handler", "tool_observer"):
                # These return a reaction: accept the same shorthands as phase hooks.
                wrapped = _as_hook(method, where)
                if role == "action_handler":
                    handlers[role][arg] = wrapped
                else:
                    by_role.setdefault(role, []).append(wrapped)
            else:
                by_role.setdefault(role, []).append(method)
        return Contributions(
            tools=declared.tools,
            state_keys=declared.keys,
            phase_hooks=hooks,
            tool_gates=by_role.get("tool_gate", ()),
            tool_observers=by_role.get("tool_observer", ()),
            run_end_guards=by_role.get("run_end_guard", ()),
            stop_conditions=by_role.get("stop_condition", ()),
            dynamic_tools=by_role.get("tool_source", ()),
            effect_handlers=handlers["effect_handler"],
            action_handlers=handlers["action_handler"],
            inherit=bool(type(self).inherit),
        )

    def __repr__(self) -> str:
        return f"<plugin {self.manifest.id!r} {type(self).__qualname__}>"
