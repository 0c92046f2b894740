"""The spans of one run leg: ``invoke_agent`` (the leg), ``chat`` (an inference), ``execute_tool``.

A ``chat`` and an ``execute_tool`` span is the current span while its call is
in flight (attached to the OpenTelemetry context of the task running it), so
what the call does nests under it: the HTTP request of a provider, and a
sub-agent's ``invoke_agent``. The run's own span is never made current: a leg
may leave through exceptions the runtime does not catch, and a context left
attached would leak into the caller's task.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import awaken_runtime
from awaken_runtime import (
    Error,
    InferenceRequest,
    InferenceResponse,
    ObservedRun,
    RunState,
    SuspendCall,
    ToolCall,
    ToolOutput,
)

from . import _names as n
from ._content import as_json, input_messages, output_messages
from ._providers import chat_attributes

if TYPE_CHECKING:
    from ._telemetry import GenAITelemetry

__all__ = ["ChatSpan", "RunSpan", "ToolSpan", "error_type"]

_PROPAGATOR = TraceContextTextMapPropagator()
"""W3C trace context, always: what a ticket stores must mean the same in any process,
whatever propagator the application configured globally."""


def error_type(exc: BaseException) -> str:
    """``error.type`` of an exception: its qualified class name (``cancelled`` for a cancel)."""
    if isinstance(exc, asyncio.CancelledError):
        return n.AWAKEN_CANCELLED
    cls = type(exc)
    name, module = cls.__qualname__, cls.__module__
    if module == "builtins":
        return name
    if module.startswith("awaken_runtime.") and getattr(awaken_runtime, name, None) is cls:
        return f"awaken_runtime.{name}"  # the public name outlives private module paths
    return f"{module}.{name}"


def _fail(span: Span, exc: BaseException) -> str:
    kind = error_type(exc)
    span.set_attribute(n.ERROR_TYPE, kind)
    if not isinstance(exc, asyncio.CancelledError):
        span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, str(exc) or kind))
    return kind


class RunSpan:
    """One leg's ``invoke_agent`` span (a ``RunObservation``)."""

    __slots__ = ("_context", "_run", "_span", "_telemetry", "_trace")

    def __init__(self, telemetry: GenAITelemetry, span: Span, run: ObservedRun) -> None:
        self._telemetry = telemetry
        self._span = span
        self._run = run
        self._context = trace.set_span_in_context(span)
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=self._context)
        self._trace = carrier

    @property
    def span(self) -> Span:
        """The leg's span (for a sub-agent's parent lookup)."""
        return self._span

    @property
    def trace(self) -> dict[str, str]:
        """This span's W3C trace context, stored with every ticket the leg parks."""
        return self._trace

    def start_inference(self, request: InferenceRequest) -> ChatSpan:
        """Open a ``chat {model}`` CLIENT span under this leg."""
        return ChatSpan(self._telemetry, self._context, self._run, request)

    def start_tool(self, call: ToolCall) -> ToolSpan:
        """Open an ``execute_tool {tool}`` INTERNAL span under this leg."""
        return ToolSpan(self._telemetry, self._context, self._run, call)

    def end(self, state: RunState) -> None:
        """Record how the leg ended and count it."""
        span = self._span
        cause = state.end_cause
        kind = "waiting" if state.phase.value == "waiting" else cause.kind if cause else "ended"
        usage = state.usage
        span.set_attributes(
            {
                n.AWAKEN_PHASE: state.phase.value,
                n.AWAKEN_END_CAUSE: kind,
                n.AWAKEN_STEPS: state.steps,
                n.USAGE_INPUT_TOKENS: usage.prompt_tokens,
                n.USAGE_OUTPUT_TOKENS: usage.completion_tokens,
            }
        )
        counted: dict[str, Any] = {n.AGENT_NAME: self._run.agent_id, n.AWAKEN_END_CAUSE: kind}
        if isinstance(cause, Error):
            failure = cause.failure
            span.set_attribute(n.ERROR_TYPE, failure.kind)
            span.set_status(Status(StatusCode.ERROR, failure.message))
            counted[n.ERROR_TYPE] = failure.kind
        span.end()
        self._telemetry.leg_ended(self._run.run_id, counted)


class ChatSpan:
    """One inference's ``chat`` span and its two metrics (an ``InferenceObservation``)."""

    __slots__ = ("_metric", "_span", "_started", "_telemetry", "_token")

    def __init__(
        self,
        telemetry: GenAITelemetry,
        parent: otel_context.Context,
        run: ObservedRun,
        request: InferenceRequest,
    ) -> None:
        self._telemetry = telemetry
        model, attributes = chat_attributes(request.model)
        self._metric = dict(attributes)
        params = request.params
        attributes[n.CONVERSATION_ID] = run.thread_id
        attributes[n.AGENT_NAME] = run.agent_id
        attributes[n.AWAKEN_RUN_ID] = run.run_id
        attributes[n.AWAKEN_STEP] = request.step
        attributes[n.REQUEST_STREAM] = True
        if params.temperature is not None:
            attributes[n.REQUEST_TEMPERATURE] = params.temperature
        if params.top_p is not None:
            attributes[n.REQUEST_TOP_P] = params.top_p
        if params.max_output_tokens is not None:
            attributes[n.REQUEST_MAX_TOKENS] = params.max_output_tokens
        if params.stop:
            attributes[n.REQUEST_STOP_SEQUENCES] = list(params.stop)
        if telemetry.capture_content:
            attributes[n.INPUT_MESSAGES] = input_messages(request.messages)
        self._span = span = telemetry.tracer.start_span(
            f"{n.CHAT} {model}", parent, SpanKind.CLIENT, attributes
        )
        self._token = otel_context.attach(trace.set_span_in_context(span, parent))
        self._started = time.perf_counter()

    def end(self, response: InferenceResponse | None, error: BaseException | None = None) -> None:
        """Close the span; record the call's duration and, if it answered, its tokens."""
        elapsed = time.perf_counter() - self._started
        otel_context.detach(self._token)
        span, metric, telemetry = self._span, self._metric, self._telemetry
        if response is not None:
            usage = response.usage
            attributes: dict[str, Any] = {
                n.RESPONSE_FINISH_REASONS: [response.finish_reason],
                n.USAGE_INPUT_TOKENS: usage.prompt_tokens,
                n.USAGE_OUTPUT_TOKENS: usage.completion_tokens,
            }
            if usage.cached_tokens:
                attributes[n.USAGE_CACHE_READ_INPUT_TOKENS] = usage.cached_tokens
            if usage.reasoning_tokens:
                attributes[n.USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens
            if response.response_id:
                attributes[n.RESPONSE_ID] = response.response_id
            if response.response_model:
                attributes[n.RESPONSE_MODEL] = response.response_model
                metric[n.RESPONSE_MODEL] = response.response_model
            if telemetry.capture_content:
                attributes[n.OUTPUT_MESSAGES] = output_messages(response)
            span.set_attributes(attributes)
            telemetry.tokens.record(usage.prompt_tokens, {**metric, n.TOKEN_TYPE: "input"})
            telemetry.tokens.record(usage.completion_tokens, {**metric, n.TOKEN_TYPE: "output"})
        elif error is not None:
            metric[n.ERROR_TYPE] = _fail(span, error)
        telemetry.duration.record(elapsed, metric)
        span.end()


class ToolSpan:
    """One tool execution's ``execute_tool`` span (a ``ToolObservation``)."""

    __slots__ = ("_span", "_telemetry", "_token")

    def __init__(
        self,
        telemetry: GenAITelemetry,
        parent: otel_context.Context,
        run: ObservedRun,
        call: ToolCall,
    ) -> None:
        self._telemetry = telemetry
        attributes: dict[str, Any] = {
            n.OPERATION_NAME: n.EXECUTE_TOOL,
            n.TOOL_NAME: call.name,
            n.TOOL_CALL_ID: call.id,
            n.TOOL_TYPE: "function",
            n.CONVERSATION_ID: run.thread_id,
            n.AWAKEN_RUN_ID: run.run_id,
        }
        if telemetry.capture_content:
            attributes[n.TOOL_CALL_ARGUMENTS] = as_json(call.arguments)
        self._span = span = telemetry.tracer.start_span(
            f"{n.EXECUTE_TOOL} {call.name}", parent, SpanKind.INTERNAL, attributes
        )
        self._token = otel_context.attach(trace.set_span_in_context(span, parent))

    def end(self, output: ToolOutput | None, error: BaseException | None = None) -> None:
        """Close the span with the call's outcome."""
        otel_context.detach(self._token)
        span = self._span
        if output is not None:
            if output.is_error:
                # A model-visible error result: the call did not do its job.
                span.set_attribute(n.ERROR_TYPE, "tool_error")
                span.set_status(Status(StatusCode.ERROR, output.content[:200]))
            span.set_attribute(n.AWAKEN_TOOL_OUTCOME, "error" if output.is_error else "success")
            if self._telemetry.capture_content:
                span.set_attribute(n.TOOL_CALL_RESULT, output.content)
        elif isinstance(error, SuspendCall):
            span.set_attribute(n.AWAKEN_TOOL_OUTCOME, "suspended")
        elif error is not None:
            _fail(span, error)
            cancelled = isinstance(error, asyncio.CancelledError)
            span.set_attribute(n.AWAKEN_TOOL_OUTCOME, "cancelled" if cancelled else "failed")
        span.end()
