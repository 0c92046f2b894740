"""``--setup setup_worker:setup``: the scripted model of the benchmark's child agent."""

from __future__ import annotations

from awaken_runtime import AgentRuntimeBuilder, ScriptedExecutor


def setup(builder: AgentRuntimeBuilder) -> None:
    """A model that always answers the same short text, in a few chunks."""
    executor = ScriptedExecutor(["The work is done, as asked."], repeat=True, chunk_size=8)
    executor.record_requests = False
    builder.with_provider("scripted", executor)
