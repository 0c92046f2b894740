"""The plugin contract: manifest, capability bound, contributions, hook signatures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_serializer,
    field_validator,
)

from ..messages._message import Message, ToolCall
from ..state._effects import Effect
from ..state._engine import Command, Scope, Store
from ..state._state_key import StateKey, StateKeyDecl
from ..tools._tool import Tool, ToolOutput
from ._actions import ActionHandler, EffectHandler, ScheduledAction
from ._context import Band
from ._points import PhaseHookPoint

if TYPE_CHECKING:
    from ..messages._transcript import MessageView
    from ..models._model import InferenceRequest, InferenceResponse
    from ..tools._children import ChildRuns
    from ._gates import GateDecision, RunEndDecision

__all__ = [
    "CapabilityBound",
    "Contributions",
    "HookReaction",
    "PhaseContext",
    "PhaseHook",
    "PhaseHookPoint",
    "Plugin",
    "PluginManifest",
    "RunEndGuard",
    "RunInfo",
    "StateKeyDecl",
    "StopConditionHook",
    "ToolCatalog",
    "ToolGateHook",
    "ToolObserver",
]


def _decl(value: Any) -> Any:
    if isinstance(value, StateKey):
        return {"key": value.key, "scope": value.scope}
    if isinstance(value, str):
        scope, sep, key = value.partition(":")
        if not sep:
            return {"key": value}
        return {"key": key, "scope": scope}
    return value


class CapabilityBound(BaseModel):
    """The upper bound of what a plugin may contribute and write.

    ``state_keys`` accepts ``StateKeyDecl``, ``StateKey`` objects or
    ``"scope:key"`` strings. ``narrows_tools`` allows the plugin to hide tools
    from requests (see ``ToolFilter``); ``effect_handlers`` and
    ``action_handlers`` name the effects and scheduled actions it may handle.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)
    tool_ids: frozenset[str] = frozenset()
    state_keys: frozenset[StateKeyDecl] = frozenset()
    phase_hooks: frozenset[PhaseHookPoint] = frozenset()
    tool_gates: bool = False
    tool_observers: bool = False
    run_end_guards: bool = False
    dynamic_tools: bool = False
    context_bands: frozenset[Band] = frozenset()
    narrows_tools: bool = False
    narrows_window: bool = False
    """May start the next request later in the transcript (``start_window_after``)."""
    inference_params: frozenset[str] = frozenset()
    """``InferenceParams`` fields the plugin may override per request (``override_params``)."""
    effect_handlers: frozenset[str] = frozenset()
    """Effect names the plugin may handle."""
    action_handlers: frozenset[str] = frozenset()
    """Scheduled-action names the plugin may handle."""
    stop_conditions: bool = False

    @field_serializer(
        "tool_ids",
        "phase_hooks",
        "context_bands",
        "effect_handlers",
        "action_handlers",
        "inference_params",
    )
    def _sorted(self, value: frozenset[str]) -> list[str]:
        # Sets dump in hash-seed order; fingerprints must not depend on the process.
        return sorted(str(v) for v in value)

    @field_serializer("state_keys")
    def _sorted_keys(self, value: frozenset[StateKeyDecl]) -> list[dict[str, str]]:
        return [
            {"key": d.key, "scope": d.scope.value}
            for d in sorted(value, key=lambda d: (d.scope.value, d.key))
        ]

    @field_validator("state_keys", mode="before")
    @classmethod
    def _coerce_keys(cls, value: Any) -> Any:
        if isinstance(value, (str, StateKey)):
            value = [value]
        return [_decl(v) for v in value]

    _slots: frozenset[tuple[Scope, str]] = PrivateAttr(default=frozenset())

    def model_post_init(self, context: Any, /) -> None:
        """Index the declared keys for O(1) checks at every commit."""
        self._slots = frozenset((d.scope, d.key) for d in self.state_keys)

    def allows_key(self, scope: Scope, key: str) -> bool:
        """Whether the plugin may write ``(scope, key)``."""
        # Read the private table directly: ``self._slots`` goes through pydantic's
        # ``__getattr__`` fallback (about 10x the set lookup), at every staged command.
        private = self.__pydantic_private__
        slots = private["_slots"] if private is not None else self._slots
        return (scope, key) in slots


class PluginManifest(BaseModel):
    """What a plugin is: id, version, description, config model and bound."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)
    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    version: str = "0.0.0"
    description: str = ""
    config_model: type[BaseModel] | None = Field(default=None, exclude=True)
    bound: CapabilityBound = Field(default_factory=CapabilityBound)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """Identity of the run a hook observes."""

    run_id: str
    thread_id: str
    agent_id: str
    profile_id: str
    namespace: str
    step: int


@dataclass(slots=True)
class PhaseContext:
    """Read-only input of a hook: one store snapshot plus what the phase is about."""

    point: PhaseHookPoint | str
    store: Store
    run: RunInfo
    messages: MessageView
    plugin_id: str = ""
    request: InferenceRequest | None = None
    response: InferenceResponse | None = None
    tool_call: ToolCall | None = None
    tool_output: ToolOutput | None = None
    children: ChildRuns | None = None
    """Starts sub-agent runs linked to this run (e.g. a compactor agent)."""
    decision: Any = None
    """While a resumed call is gated, executed and recorded: the decision that
    resumed it (``Approve``, ``Deny``, ``Respond`` or ``Replay``)."""
    ticket: Any = None
    """With ``decision``: the ``ResumeTicket`` it answered (its await reason, payload)."""


@dataclass(slots=True)
class HookReaction:
    """What a hook returns: staged commands, transcript messages, an optional stop.

    ``messages`` reach the transcript only from ``AFTER_TOOL`` hooks. ``stop``
    ends the run with ``Stopped(stop)`` after this phase commits.
    """

    commands: list[Command] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    stop: str | None = None
    effects: list[Effect] = field(default_factory=list)
    """Side effects to run after this phase's batch commits."""
    schedule: list[ScheduledAction] = field(default_factory=list)
    """Actions for a later phase point or time."""


PhaseHook: TypeAlias = Callable[[PhaseContext], Awaitable[HookReaction | None]]
"""An async hook bound to one :class:`PhaseHookPoint`."""

ToolGateHook: TypeAlias = Callable[
    [PhaseContext, ToolCall], "GateDecision | Awaitable[GateDecision | None] | None"
]
"""A pure gate deciding on one tool call; ``None`` means no objection."""

ToolObserver: TypeAlias = Callable[[PhaseContext], Awaitable[HookReaction | None]]
"""Runs at BeforeToolExecute for every call that will execute."""

RunEndGuard: TypeAlias = Callable[
    [PhaseContext], "RunEndDecision | Awaitable[RunEndDecision | None] | None"
]
"""Consulted at a natural end: ``Complete`` or ``Steer(message)``."""

StopConditionHook: TypeAlias = Callable[[PhaseContext], "str | Awaitable[str | None] | None"]
"""A plugin's stop condition: return a reason to stop, or ``None``."""

DynamicToolSource: TypeAlias = Callable[[], Sequence[Tool]]
"""Returns tools that are only known at run time; called once at run start."""


@dataclass(slots=True)
class Contributions:
    """Everything a plugin adds to an agent that enables it."""

    tools: Sequence[Tool] = ()
    state_keys: Sequence[StateKeyDecl | StateKey[Any] | str] = ()
    phase_hooks: Mapping[PhaseHookPoint, PhaseHook | Sequence[PhaseHook]] = field(
        default_factory=dict
    )
    tool_gates: Sequence[ToolGateHook] = ()
    tool_observers: Sequence[ToolObserver] = ()
    run_end_guards: Sequence[RunEndGuard] = ()
    dynamic_tools: Sequence[DynamicToolSource] = ()
    effect_handlers: Mapping[str, EffectHandler] = field(default_factory=dict)
    action_handlers: Mapping[str, ActionHandler] = field(default_factory=dict)
    stop_conditions: Sequence[StopConditionHook] = ()
    inherit: bool = False
    """Also apply this plugin's gates, observers and hooks to sub-agents of the agent."""

    def hooks_at(self, point: PhaseHookPoint) -> list[PhaseHook]:
        """The hooks contributed for ``point`` as a list."""
        found = self.phase_hooks.get(point)
        if found is None:
            return []
        if callable(found):
            return [found]
        return list(found)


@runtime_checkable
class Plugin(Protocol):
    """A runtime extension. ``resolve`` receives the validated config (or ``None``)."""

    @property
    def manifest(self) -> PluginManifest:
        """Identity, config model and capability bound."""
        ...

    def resolve(self, config: Any) -> Contributions:
        """Contributions for one agent, given that agent's config for this plugin."""
        ...


@runtime_checkable
class ToolCatalog(Protocol):
    """A plugin whose tools live outside the process (e.g. on MCP servers).

    Optional, next to :class:`Plugin`: before a run, a resume or a sub-agent
    run of an agent that enables the plugin, the runtime awaits
    ``catalog(config, owner)`` and resolves the agent with the tools it returns
    as that plugin's contributions (the bound must allow ``dynamic_tools``).
    Their descriptors are part of the snapshot and its fingerprint: when the
    catalog changes, the agent is resolved again and tickets parked under the
    old catalog are rejected. ``owner`` is the runtime asking: keep
    connections per owner, and drop them in ``release(owner)``, which
    ``Runtime.aclose()`` awaits. ``catalog`` is on the path of every run, so
    it should answer from a cache unless something changed.
    """

    async def catalog(self, config: Any, owner: object) -> Sequence[Tool]:
        """The plugin's tools for one agent's validated config, as of now."""
        ...

    async def release(self, owner: object) -> None:
        """Close whatever the plugin holds for ``owner`` (idempotent)."""
        ...
