"""Fixtures for awaken-otel: an SDK tracer and meter provider with in-memory exporters.

* ``otel``: a :class:`Otel` with its own ``TracerProvider`` (``SimpleSpanProcessor``
  into an ``InMemorySpanExporter``) and ``MeterProvider`` (``InMemoryMetricReader``),
  passed explicitly (the global providers are never set). ``otel.telemetry()``
  makes a ``GenAITelemetry`` on them; ``otel.spans()``, ``otel.one(name)``,
  ``otel.points(metric)`` read what was recorded.
* ``runtime_for(scripts, observer, ...)``: agents named by the keys of ``scripts``,
  each on its own scripted model (``ScriptedExecutor``, or ``executors[agent]``),
  ``delegates`` for ``boss``, ``tools`` and ``plugins`` per agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from awaken_otel import GenAITelemetry
from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    InMemoryStore,
    ModelSpec,
    RunObserver,
    Runtime,
    ScriptedExecutor,
    Tool,
)


@dataclass
class Otel:
    tracer_provider: TracerProvider
    exporter: InMemorySpanExporter
    meter_provider: MeterProvider
    reader: InMemoryMetricReader
    _telemetries: list[GenAITelemetry] = field(default_factory=list)

    def telemetry(self, **kw: Any) -> GenAITelemetry:
        return GenAITelemetry(self.tracer_provider, self.meter_provider, **kw)

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.spans() if s.name == name]
        assert len(found) == 1, (name, [s.name for s in self.spans()])
        return found[0]

    def points(self, metric: str) -> list[Any]:
        """Every data point of ``metric`` (all scopes), as the reader collected them now."""
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        out.extend(m.data.data_points)
        return out


@pytest.fixture
def otel() -> Otel:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return Otel(tracer_provider, exporter, MeterProvider(metric_readers=[reader]), reader)


def build_runtime(
    scripts: dict[str, Sequence[Any]],
    observer: RunObserver | None,
    *,
    tools: dict[str, Sequence[Tool]] | None = None,
    delegates: Sequence[str] = (),
    store: Any = None,
    plugins: dict[str, Sequence[Any]] | None = None,
    executors: dict[str, Any] | None = None,
    **agent: Any,
) -> Runtime:
    builder = AgentRuntimeBuilder(discover=False).with_store(store or InMemoryStore())
    if observer is not None:
        builder.with_observer(observer)
    seen: set[str] = set()
    for agent_id, turns in scripts.items():
        spec = ModelSpec(id=f"m-{agent_id}", provider=f"p-{agent_id}", model=f"s-{agent_id}")
        builder.with_model(spec)
        executor = (executors or {}).get(agent_id) or ScriptedExecutor(list(turns))
        builder.with_provider(f"p-{agent_id}", executor)
        own = list((tools or {}).get(agent_id, ()))
        for t in own:
            if t.descriptor.id not in seen:
                builder.with_tool(t)
                seen.add(t.descriptor.id)
        builder.with_agent_spec(
            AgentConfig(
                id=agent_id,
                instructions=f"You are {agent_id}.",
                model_binding=f"m-{agent_id}",
                tool_ids=[t.descriptor.id for t in own],
                delegates=list(delegates) if agent_id == "boss" else [],
                plugin_ids=[p.manifest.id for p in (plugins or {}).get(agent_id, ())],
                **agent,
            )
        )
    for own_plugins in (plugins or {}).values():
        for plugin in own_plugins:
            builder.with_plugin(plugin)
    return builder.build()


@pytest.fixture
def runtime_for() -> Callable[..., Runtime]:
    return build_runtime
