"""Structured output: an agent that must end with a validated ``TripPlan``.

The agent looks up the weather with a tool, then gives its final result
through the final-result tool. The scripted model's first result is invalid
(a day is missing its activity); the runtime sends the validation error back,
the model fixes it, and the run ends with ``state.output_as(TripPlan)``.
With a real model only the model spec changes (``LiteLLMExecutor``; the
provider's JSON-schema response format where the model takes one).

Run it offline:  python examples/structured_output.py
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from awaken_runtime import (
    AgentConfig,
    AgentRuntimeBuilder,
    ModelSpec,
    OutputSpec,
    ScriptedExecutor,
    ScriptedTurn,
    tool,
)


class Day(BaseModel):
    day: int
    activity: str


class TripPlan(BaseModel):
    city: str
    days: list[Day]


@tool
def weather(city: str) -> str:
    """The forecast for a city.

    Args:
        city: The city name.
    """
    return f"{city}: sunny for three days"


TURNS = [
    ScriptedTurn.call("weather", {"city": "Lisbon"}),
    # Invalid: day 2 has no activity. The model sees the error and tries again.
    ScriptedTurn.call(
        "final_result", {"city": "Lisbon", "days": [{"day": 1, "activity": "Alfama"}, {"day": 2}]}
    ),
    ScriptedTurn.call(
        "final_result",
        {
            "city": "Lisbon",
            "days": [{"day": 1, "activity": "Alfama"}, {"day": 2, "activity": "Belém"}],
        },
    ),
]


async def main() -> None:
    executor = ScriptedExecutor(TURNS)
    runtime = (
        AgentRuntimeBuilder(discover=False)
        .with_tool(weather)
        .with_model(ModelSpec(id="demo", provider="scripted", model="demo"))
        .with_provider("scripted", executor)
        .with_agent_spec(
            AgentConfig(
                id="planner",
                model_binding="demo",
                tool_ids=["weather"],
                output=OutputSpec.of(TripPlan, mode="tool", retries=2),
            )
        )
        .build()
    )
    state = await runtime.run("planner", "Plan two days in Lisbon.")
    feedback = next(
        m.text for m in executor.requests[2].messages if m.text.startswith("Invalid final result")
    )
    print("the model was told:", feedback)
    plan = state.output_as(TripPlan)
    print("end:", state.end_cause.kind if state.end_cause else None)
    for day in plan.days:
        print(f"day {day.day}: {day.activity}")
    print("as JSON:", state.final_text)


if __name__ == "__main__":
    asyncio.run(main())
