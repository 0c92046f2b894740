"""The bundled offline demo: a weather agent on a scripted model.

It shows the moving parts in one run: two tools the model calls, a plugin
that injects request-only context and keeps a run-scope counter, the event
stream (text deltas, tool calls) and the final usage and cost line.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..agents._config import AgentConfig
from ..lifecycle._events import (
    AgentEvent,
    RunFinish,
    StepStart,
    TextDelta,
    ToolCallDone,
    ToolCallReady,
)
from ..messages._message import ToolCall
from ..models._model import (
    InferenceRequest,
    InferenceResponse,
    LlmExecutor,
    ModelSpec,
    Pricing,
    StreamDelta,
)
from ..models._scripted import ScriptedExecutor, ScriptedTurn, TurnSource
from ..plugins._context import Band, ContextMessage, inject
from ..plugins._plugin import (
    CapabilityBound,
    Contributions,
    HookReaction,
    PhaseContext,
    PhaseHookPoint,
    PluginManifest,
)
from ..runtime._builder import AgentRuntimeBuilder
from ..runtime._runtime import Runtime
from ..state._engine import Scope
from ..state._state_key import StateKey
from ..tools._function_tool import tool

__all__ = ["DEMO_PROMPT", "build_demo_runtime", "city_in", "render_event"]

DEMO_PROMPT = "What's the weather in Lisbon right now, in Fahrenheit?"

_WEATHER = {
    "lisbon": (21.0, "clear skies"),
    "oslo": (-3.0, "light snow"),
    "paris": (17.0, "light rain"),
    "tokyo": (26.0, "humid sunshine"),
    "new york": (12.0, "a brisk wind"),
    "cairo": (33.0, "dry heat"),
}
# Words that may sit inside a city name ("Rio de Janeiro") and words that follow
# "in" without being a place ("in Fahrenheit").
_LINKS = frozenset({"de", "do", "da", "del", "la", "le", "of"})
_NOT_PLACES = frozenset({"fahrenheit", "celsius", "kelvin", "english", "i"})


def city_in(prompt: str, default: str = "Lisbon") -> str:
    """The city a weather question asks about (what a real model would pick out).

    A city the demo knows wins wherever it appears; otherwise the capitalized
    words after the first "in", "for" or "at" that has some; otherwise ``default``.
    """
    lowered = prompt.lower()
    known = [c for c in _WEATHER if re.search(rf"\b{re.escape(c)}\b", lowered)]
    if known:
        return min(known, key=lowered.index).title()
    words = re.findall(r"[^\W\d_][\w'-]*", prompt)
    for i, word in enumerate(words):
        if word.lower() not in ("in", "for", "at"):
            continue
        name: list[str] = []
        for nxt in words[i + 1 :]:
            if (nxt[0].isupper() and nxt.lower() not in _NOT_PLACES) or (name and nxt in _LINKS):
                name.append(nxt)
            else:
                break
        while name and name[-1] in _LINKS:
            name.pop()
        if name:
            return " ".join(name)
    return default


@tool
def lookup_weather(city: str) -> dict[str, Any]:
    """Current weather for a city.

    Args:
        city: City name, e.g. "Lisbon".
    """
    celsius, sky = _WEATHER.get(city.lower(), (15.0, "overcast"))
    return {"city": city, "celsius": celsius, "sky": sky}


@tool
def celsius_to_fahrenheit(celsius: float) -> str:
    """Convert a temperature from Celsius to Fahrenheit.

    Args:
        celsius: Temperature in degrees Celsius.
    """
    return f"{celsius * 9 / 5 + 32:.1f}"


STEPS = StateKey("demo.steps_seen", int, default=0, scope=Scope.RUN)


class BriefingPlugin:
    """Injects a short briefing into the system prompt and counts steps."""

    manifest = PluginManifest(
        id="briefing",
        version="0.1.0",
        description="Adds a units briefing to every request and counts steps.",
        bound=CapabilityBound(
            phase_hooks=frozenset({PhaseHookPoint.BEFORE_INFERENCE}),
            state_keys=frozenset({STEPS.decl}),
            context_bands=frozenset({Band.SYSTEM}),
        ),
    )

    def resolve(self, config: Any) -> Contributions:
        """One BEFORE_INFERENCE hook."""

        async def brief(ctx: PhaseContext) -> HookReaction:
            seen = STEPS.get(ctx.store) + 1
            note = ContextMessage(
                key="briefing.units",
                band=Band.SYSTEM,
                content=f"Briefing (step {seen}): the user prefers Fahrenheit.",
            )
            return HookReaction(commands=[inject(note), STEPS.set(seen)])

        return Contributions(phase_hooks={PhaseHookPoint.BEFORE_INFERENCE: brief})


# The scripted model reads the prompt and the tool results it was given, like a real
# one would: each turn is a function of the request.
def _ask_weather(request: InferenceRequest) -> ScriptedTurn:
    prompt = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    city = city_in(prompt)
    return ScriptedTurn(
        reasoning=f"The user asks about {city}; I need its current weather first.",
        tool_calls=[ToolCall(id="call_1", name="lookup_weather", arguments={"city": city})],
    )


def _convert(request: InferenceRequest) -> ScriptedTurn:
    # The newest tool result: a continued thread holds earlier runs' results too.
    weather = json.loads([m for m in request.messages if m.role == "tool"][-1].text)
    call = ToolCall(
        id="call_2", name="celsius_to_fahrenheit", arguments={"celsius": weather["celsius"]}
    )
    return ScriptedTurn(tool_calls=[call])


def _final_answer(request: InferenceRequest) -> ScriptedTurn:
    results = [m for m in request.messages if m.role == "tool"][-2:]
    weather = json.loads(results[0].text)
    fahrenheit = results[1].text
    return ScriptedTurn(
        text=f"In {weather['city']} it is {fahrenheit}°F ({weather['celsius']:.0f}°C) "
        f"with {weather['sky']}."
    )


class PacedExecutor:
    """Wraps an executor and waits ``delay`` seconds before each streamed chunk.

    The scripted model answers in microseconds; on a terminal the demo paces it
    so streaming is visible. Piped output is never paced.
    """

    def __init__(self, inner: LlmExecutor, delay: float) -> None:
        self.inner = inner
        self.delay = delay

    async def stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[StreamDelta | InferenceResponse]:
        """The inner executor's stream, one chunk per ``delay``."""
        async for item in self.inner.stream(request):
            if isinstance(item, StreamDelta) and self.delay > 0:
                await asyncio.sleep(self.delay)
            yield item


def build_demo_runtime(*, chunk_size: int = 6, delay: float = 0.0) -> Runtime:
    """A runtime with the demo agent ``weather`` on a scripted model (no network).

    ``delay`` paces each streamed chunk (seconds), for a terminal.
    """
    turns: list[TurnSource] = [_ask_weather, _convert, _final_answer]
    executor = ScriptedExecutor(turns, chunk_size=chunk_size)
    return (
        AgentRuntimeBuilder(discover=False)
        .with_model(
            ModelSpec(
                id="demo-model",
                provider="scripted",
                model="scripted-weather",
                context_window=8192,
                pricing=Pricing(input_per_mtok=0.15, output_per_mtok=0.60),
            )
        )
        .with_provider("scripted", PacedExecutor(executor, delay) if delay else executor)
        .with_tool(lookup_weather)
        .with_tool(celsius_to_fahrenheit)
        .with_plugin(BriefingPlugin())
        .with_agent_spec(
            AgentConfig(
                id="weather",
                instructions="You are a concise weather assistant.",
                model_binding="demo-model",
                tool_ids=["lookup_weather", "celsius_to_fahrenheit"],
                plugin_ids=["briefing"],
            )
        )
        .build()
    )


_channel: dict[str, str] = {}
"""Run id -> the channel of its last streamed delta (where reasoning ends)."""


def render_event(event: AgentEvent, write: Callable[[str], None], *, color: bool = False) -> None:
    """Print one event the way the CLI shows a run (reasoning dimmed when ``color``)."""
    if isinstance(event, StepStart):
        _channel.pop(event.run_id, None)
        write(f"\n[step {event.step}]\n")
    elif isinstance(event, TextDelta):
        # Reasoning gets its own labelled line, apart from the answer that follows it.
        last = _channel.get(event.run_id)
        _channel[event.run_id] = event.channel
        if event.channel == "reasoning":
            text = event.delta if last == "reasoning" else f"(thinking) {event.delta}"
            write(f"\x1b[2m{text}\x1b[0m" if color else text)
        else:
            write(event.delta if last != "reasoning" else f"\n{event.delta}")
    elif isinstance(event, ToolCallReady):
        write(f"\n  -> {event.name}({json.dumps(event.arguments)})")
    elif isinstance(event, ToolCallDone):
        write(f"\n  <- [{event.outcome}] {event.output}\n")
    elif isinstance(event, RunFinish):
        _channel.pop(event.run_id, None)
        usage = event.usage
        cause = event.end_cause.kind if event.end_cause is not None else event.phase.value
        cost = f" · ${event.cost:.6f}" if event.cost is not None else ""
        write(
            f"\n\nrun {event.phase.value}: {cause} · {usage.total_tokens} tokens "
            f"({usage.prompt_tokens} in / {usage.completion_tokens} out){cost}\n"
        )
