"""The agent the ingress throughput benchmark's workers run (``--setup bench_agents:configure``):
five steps of an instant tool, then an answer, on a scripted model."""

from __future__ import annotations

from typing import Any

from awaken_runtime import AgentConfig, ModelSpec, ScriptedExecutor, ScriptedTurn, ToolCall, tool

STEPS = 5


def _turn(request: Any) -> ScriptedTurn | str:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done >= STEPS:
        return "done"
    call = ToolCall(id=f"s{done + 1}", name="work", arguments={"step": done + 1})
    return ScriptedTurn(tool_calls=[call])


@tool
def work(step: int) -> str:
    """One instant step."""
    return f"step {step} done"


def configure(builder: Any) -> None:
    """Scripted model, the tool and the ``stepper`` agent."""
    builder.with_model(ModelSpec(id="m", provider="scripted", model="s"))
    builder.with_provider("scripted", ScriptedExecutor([_turn], repeat=True))
    builder.with_tool(work)
    builder.with_agent_spec(AgentConfig(id="stepper", model_binding="m", tool_ids=["work"]))
