"""The observer seam: what a run tells an instrumentation (tracing, metrics) as it goes.

A :class:`RunObserver` given to the runtime (``AgentRuntimeBuilder.with_observer``)
is told when each leg of a run starts and gets back a :class:`RunObservation`;
the leg reports its inferences and tool executions to that observation and
ends it once. Without an observer the loop pays one ``is None`` check per
inference and per tool call.

Every ``start_*`` is matched by exactly one ``end`` of what it returned, in
the same asyncio task (so an observer may make its span current in between:
a sub-agent started by a tool then nests under that tool). Observers must not
raise: the run does not guard against them.

The runtime depends on no tracing library: ``awaken-otel`` implements these
protocols with OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..messages._message import ToolCall
    from ..models._model import InferenceRequest, InferenceResponse, ModelSpec
    from ..tools._tool import ToolOutput
    from ._run_state import RunState

__all__ = [
    "InferenceObservation",
    "ObservedRun",
    "RunObservation",
    "RunObserver",
    "ToolObservation",
]

Leg = Literal["start", "resume", "cancel", "continue"]
"""How a leg begins: a new run, decisions continuing a parked run, cancelling it, or
continuing a run a dead process left running (``Runtime.continue_run``)."""


@dataclass(frozen=True, slots=True)
class ObservedRun:
    """Who a starting leg is: the run's identity and, for a resumed leg, where it parked."""

    run_id: str
    thread_id: str
    agent_id: str
    model: ModelSpec
    parent_run_id: str | None = None
    """The delegating run, for a sub-agent."""
    leg: Leg = "start"
    """``start`` (a new run), ``resume`` (decisions continue a parked run), ``cancel``
    or ``continue`` (a run a dead process left running)."""
    parked: tuple[Mapping[str, str], ...] = ()
    """For a resumed or cancelled leg: the distinct ``ResumeTicket.trace`` values of the
    tickets it answers (what ``RunObservation.trace`` gave the leg that parked them)."""


@runtime_checkable
class InferenceObservation(Protocol):
    """One model call in flight."""

    def end(self, response: InferenceResponse | None, error: BaseException | None = None) -> None:
        """The call answered (``response``) or failed: ``error`` is what the provider
        raised, ``asyncio.CancelledError`` when the run was cancelled mid-call."""
        ...


@runtime_checkable
class ToolObservation(Protocol):
    """One tool execution in flight."""

    def end(self, output: ToolOutput | None, error: BaseException | None = None) -> None:
        """The tool returned ``output`` or raised ``error`` (``SuspendCall`` when it
        parked, ``ToolError`` for a hard failure, ``asyncio.CancelledError`` when the
        run was cancelled). Other exceptions the run turns into an error result."""
        ...


@runtime_checkable
class RunObservation(Protocol):
    """One leg of a run, from its start to its end or park."""

    @property
    def trace(self) -> Mapping[str, str]:
        """Text to store with every ticket this leg parks (e.g. W3C trace-context
        headers), handed back in ``ObservedRun.parked`` when a leg resumes them."""
        ...

    def start_inference(self, request: InferenceRequest) -> InferenceObservation:
        """A model call is about to stream ``request``."""
        ...

    def start_tool(self, call: ToolCall) -> ToolObservation:
        """A gated, allowed tool call is about to execute."""
        ...

    def end(self, state: RunState) -> None:
        """The leg ended (``state.phase`` ``ENDED``) or parked (``WAITING``)."""
        ...


@runtime_checkable
class RunObserver(Protocol):
    """Instrumentation for every run of a runtime (see the module docstring)."""

    def start_run(self, run: ObservedRun) -> RunObservation:
        """A leg starts; the returned observation receives the rest of it."""
        ...
