"""OpenTelemetry for Awaken: GenAI-convention traces and metrics of every run.

``GenAITelemetry(tracer_provider, meter_provider)`` is a ``RunObserver``; give
it to ``AgentRuntimeBuilder.with_observer``. ``names`` holds every attribute,
span and metric name it emits.
"""

from __future__ import annotations

from . import _names as names
from ._spans import error_type
from ._telemetry import GenAITelemetry

__all__ = ["GenAITelemetry", "error_type", "names"]
