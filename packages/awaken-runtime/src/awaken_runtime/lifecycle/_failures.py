"""Typed, serializable reasons a run ended: ``Phase``, ``EndCause`` and ``Failure``."""

from __future__ import annotations

import enum
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AbandonedFailure",
    "Cancelled",
    "CapabilityBoundFailure",
    "ConfigFailure",
    "EndCause",
    "Error",
    "Failure",
    "InternalFailure",
    "LeaseLostFailure",
    "MaxSteps",
    "NaturalEnd",
    "Phase",
    "PluginFailure",
    "ProviderFailure",
    "StateConflictFailure",
    "Stopped",
    "ToolFailure",
]


class Phase(enum.StrEnum):
    """The committed status of a run."""

    RUNNING = "running"
    WAITING = "waiting"
    ENDED = "ended"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class StateConflictFailure(_Frozen):
    """Two producers broke a key's merge policy in one batch."""

    kind: Literal["state_conflict"] = "state_conflict"
    key: str
    scope: str
    producers: tuple[str, str]
    message: str


class CapabilityBoundFailure(_Frozen):
    """A plugin contributed or wrote something its ``CapabilityBound`` does not allow."""

    kind: Literal["capability_bound"] = "capability_bound"
    plugin_id: str
    item: str
    message: str


class ProviderFailure(_Frozen):
    """The model provider failed (after retries)."""

    kind: Literal["provider"] = "provider"
    provider: str
    model: str
    message: str


class ToolFailure(_Frozen):
    """A tool raised ``ToolError``: a hard failure not handed to the model."""

    kind: Literal["tool"] = "tool"
    tool_id: str
    call_id: str
    message: str


class PluginFailure(_Frozen):
    """A plugin hook, gate, observer or guard raised."""

    kind: Literal["plugin"] = "plugin"
    plugin_id: str
    hook: str
    message: str


class ConfigFailure(_Frozen):
    """The agent's configuration could not be used."""

    kind: Literal["config"] = "config"
    message: str


class LeaseLostFailure(_Frozen):
    """The run lost its thread: its lease lapsed and could not be renewed, or another
    run committed to the thread. It executed nothing after noticing."""

    kind: Literal["lease_lost"] = "lease_lost"
    thread_id: str
    message: str
    unrecorded_call_ids: tuple[str, ...] = ()
    """Calls that executed but whose results the store no longer accepted (another
    run had committed): their outcome is only in this failure and the events."""


class AbandonedFailure(_Frozen):
    """The process running the run stopped (crashed, was killed) before the run ended.

    Found and recorded later, by a process that took the thread over once the
    dead one's lease lapsed. The run's committed steps are kept; a call that
    was in flight may or may not have run.
    """

    kind: Literal["abandoned"] = "abandoned"
    thread_id: str
    message: str


class InternalFailure(_Frozen):
    """A bug in the runtime itself."""

    kind: Literal["internal"] = "internal"
    message: str


Failure: TypeAlias = Annotated[
    StateConflictFailure
    | CapabilityBoundFailure
    | ProviderFailure
    | ToolFailure
    | PluginFailure
    | ConfigFailure
    | LeaseLostFailure
    | AbandonedFailure
    | InternalFailure,
    Field(discriminator="kind"),
]
"""Any typed failure; the ``kind`` field tells which."""


class NaturalEnd(_Frozen):
    """The model answered without tool calls and every run-end guard agreed."""

    kind: Literal["natural_end"] = "natural_end"


class MaxSteps(_Frozen):
    """The agent's ``max_steps`` was reached."""

    kind: Literal["max_steps"] = "max_steps"
    max_steps: int


class Cancelled(_Frozen):
    """The run's cancellation token was triggered."""

    kind: Literal["cancelled"] = "cancelled"


class Stopped(_Frozen):
    """A plugin or stop condition ended the run."""

    kind: Literal["stopped"] = "stopped"
    reason: str


class Error(_Frozen):
    """The run failed; ``failure`` says how."""

    kind: Literal["error"] = "error"
    failure: Failure


EndCause: TypeAlias = Annotated[
    NaturalEnd | MaxSteps | Cancelled | Stopped | Error, Field(discriminator="kind")
]
"""Why a run ended."""
