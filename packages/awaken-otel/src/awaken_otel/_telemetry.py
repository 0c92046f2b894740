"""``GenAITelemetry``: the runtime's ``RunObserver`` that emits OpenTelemetry spans and metrics.

Where a leg's ``invoke_agent`` span goes:

* a new root run: under the caller's current span (an HTTP request, a job), if any;
* a sub-agent: under the delegating ``execute_tool`` span, which is current
  while the tool runs; a child started elsewhere (e.g. by a hook, where the
  context is still the one the parent started in) goes under its parent run's span;
* a resumed or cancelled leg: in the trace of the leg that parked it (the W3C
  context stored with the tickets), linked to that leg's span. It nests under
  the current span when that span is in the same trace (a parent's resumed
  tool resuming its child); otherwise under the parked leg's span, linked to
  the current span of the other trace (the request that resumed it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from awaken_runtime import ObservedRun

from . import _names as n
from ._providers import chat_attributes
from ._spans import RunSpan, error_type

__all__ = ["GenAITelemetry"]

_SCOPE = "awaken_otel"
try:
    _VERSION = version("awaken-otel")
except PackageNotFoundError:  # run from a source tree
    _VERSION = "0"
_PROPAGATOR = TraceContextTextMapPropagator()


class GenAITelemetry:
    """Traces and metrics of every run, sub-agent, inference and tool call.

    Give it to ``AgentRuntimeBuilder.with_observer``. ``tracer_provider`` and
    ``meter_provider`` default to the global ones (read, never set). With
    ``capture_content=True`` spans also carry prompts, answers and tool
    arguments and results (``gen_ai.input.messages`` ...), which may hold
    personal data; off by default.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        capture_content: bool = False,
    ) -> None:
        self.capture_content = capture_content
        self.tracer = trace.get_tracer(_SCOPE, _VERSION, tracer_provider)
        meter = metrics.get_meter(_SCOPE, _VERSION, meter_provider)
        self.tokens = meter.create_histogram(
            n.CLIENT_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used per model call.",
            explicit_bucket_boundaries_advisory=list(n.TOKEN_BUCKETS),
        )
        self.duration = meter.create_histogram(
            n.CLIENT_OPERATION_DURATION,
            unit="s",
            description="Duration of each model call, streaming included.",
            explicit_bucket_boundaries_advisory=list(n.DURATION_BUCKETS),
        )
        self.runs = meter.create_counter(
            n.AWAKEN_RUNS,
            unit="{run}",
            description="Run legs that ended, by end cause (a parked leg counts as waiting).",
        )
        self._open: dict[str, tuple[Span, int]] = {}
        """Run id -> its leg's span and the span id current when the leg started (for
        children started outside a tool)."""

    def start_run(self, run: ObservedRun) -> RunSpan:
        """Open the leg's ``invoke_agent {agent}`` span (see the module docstring)."""
        parent, links = self._placement(run)
        model, chat = chat_attributes(run.model)
        attributes: dict[str, Any] = {
            n.OPERATION_NAME: n.INVOKE_AGENT,
            n.AGENT_NAME: run.agent_id,
            n.CONVERSATION_ID: run.thread_id,
            n.PROVIDER_NAME: chat[n.PROVIDER_NAME],
            n.REQUEST_MODEL: model,
            n.AWAKEN_RUN_ID: run.run_id,
            n.AWAKEN_LEG: run.leg,
        }
        if run.parent_run_id is not None:
            attributes[n.AWAKEN_PARENT_RUN_ID] = run.parent_run_id
        span = self.tracer.start_span(
            f"{n.INVOKE_AGENT} {run.agent_id}", parent, SpanKind.INTERNAL, attributes, links
        )
        self._open[run.run_id] = (span, trace.get_current_span().get_span_context().span_id)
        return RunSpan(self, span, run)

    @contextmanager
    def remote_agent(self, agent: str, *, conversation_id: str | None = None) -> Iterator[Span]:
        """A CLIENT ``invoke_agent {agent}`` span, current while a call to a remote agent
        (e.g. an A2A peer behind a ``RunDelegationService``) is in flight; inside a
        delegating tool it nests under that tool's span. An exception marks it failed."""
        attributes: dict[str, Any] = {n.OPERATION_NAME: n.INVOKE_AGENT, n.AGENT_NAME: agent}
        if conversation_id is not None:
            attributes[n.CONVERSATION_ID] = conversation_id
        with self.tracer.start_as_current_span(
            f"{n.INVOKE_AGENT} {agent}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                yield span
            except BaseException as exc:
                span.set_attribute(n.ERROR_TYPE, error_type(exc))
                raise

    def leg_ended(self, run_id: str, counted: dict[str, Any]) -> None:
        """A leg's span ended: forget it and count the leg."""
        self._open.pop(run_id, None)
        self.runs.add(1, counted)

    def _placement(self, run: ObservedRun) -> tuple[otel_context.Context | None, list[Link]]:
        current = trace.get_current_span().get_span_context()
        parked = [c for c in map(_extract, run.parked) if c is not None]
        links = [Link(c, {n.AWAKEN_LINK: "parked_leg"}) for c in parked]
        if parked:
            home = parked[0]
            if current.is_valid and current.trace_id == home.trace_id:
                return None, links  # the current span continues that trace
            if current.is_valid:
                links.append(Link(current, {n.AWAKEN_LINK: "resumed_by"}))
            return trace.set_span_in_context(NonRecordingSpan(home)), links
        if run.parent_run_id is not None:
            found = self._open.get(run.parent_run_id)
            if found is not None:
                parent, caller = found
                theirs = parent.get_span_context()
                # Inside the parent's leg only its tool spans (and what a tool opens) are
                # ever current; the context the parent started in means "not in a tool".
                if (
                    not current.is_valid
                    or current.trace_id != theirs.trace_id
                    or current.span_id == caller
                ):
                    return trace.set_span_in_context(parent), links
        return None, links  # None: the current context


def _extract(carrier: Any) -> SpanContext | None:
    """The remote span context a ticket stored, or ``None`` for junk."""
    if not isinstance(carrier, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in carrier.items()
    ):
        return None
    found = trace.get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()
    return found if found.is_valid else None
