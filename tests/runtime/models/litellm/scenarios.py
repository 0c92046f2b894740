"""Scripted model scenarios shared by ``ScriptedExecutor`` and the local OpenAI server.

One :class:`Scenario` is a prompt, the model's turns and the tools the agent
has. :meth:`Turn.scripted` makes the :class:`ScriptedTurn` the scripted model
replays; :meth:`Turn.reply` the :class:`Reply` the server streams. Tool-call
arguments are raw text exactly as a model would send them (possibly not JSON);
both paths parse them the same way (``from_openai`` / the executor), so the
same scenario must leave the same transcript and events through either path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from openai_server import Reply, ToolCallSpec, UsageSpec

from awaken_runtime import Pricing, ScriptedTurn, TokenUsage, from_openai, tool

CHUNK = 4
"""Characters per streamed piece, on both paths."""

PRICING = Pricing(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
"""The test model's pricing (both paths)."""


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Turn:
    text: str = ""
    reasoning: str = ""
    calls: tuple[Call, ...] = ()
    usage: TokenUsage = field(default_factory=lambda: TokenUsage(prompt_tokens=20))

    def scripted(self) -> ScriptedTurn:
        calls = []
        if self.calls:
            (message,) = from_openai(
                [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            }
                            for c in self.calls
                        ],
                    }
                ]
            )
            calls = list(message.tool_calls or [])
        return ScriptedTurn(
            text=self.text, reasoning=self.reasoning, tool_calls=calls, usage=self.usage
        )

    def reply(self) -> Reply:
        u = self.usage
        return Reply(
            text=self.text,
            reasoning=self.reasoning,
            tool_calls=[ToolCallSpec(c.id, c.name, c.arguments) for c in self.calls],
            usage=UsageSpec(
                u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.reasoning_tokens
            ),
            chunk_size=CHUNK,
        )


@dataclass(frozen=True)
class Scenario:
    name: str
    prompt: str
    turns: tuple[Turn, ...]
    tools: tuple[str, ...] = ()
    final_text: str = ""

    def scripted_turns(self) -> list[ScriptedTurn]:
        return [t.scripted() for t in self.turns]

    def replies(self) -> list[Reply]:
        return [t.reply() for t in self.turns]

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for t in self.turns:
            total = total + t.usage
        return total


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return {"Paris": "sunny, 21C", "Rome": "rain, 17C"}.get(city, "unknown")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = {"get_weather": get_weather, "add": add}


def _u(prompt: int, completion: int, cached: int = 0, reasoning: int = 0) -> TokenUsage:
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        reasoning_tokens=reasoning,
    )


PLAIN = Scenario(
    name="plain",
    prompt="Say hello.",
    turns=(Turn(text="Hello! How can I help you today?", usage=_u(12, 9)),),
    final_text="Hello! How can I help you today?",
)

MULTI_STEP = Scenario(
    name="multi_step",
    prompt="Compare the weather in Paris and Rome.",
    turns=(
        Turn(
            text="Let me check Paris first.",
            calls=(Call("call_paris", "get_weather", '{"city": "Paris"}'),),
            usage=_u(40, 12),
        ),
        Turn(calls=(Call("call_rome", "get_weather", '{"city":"Rome"}'),), usage=_u(70, 8, 32)),
        Turn(text="Paris is sunny (21C); Rome has rain (17C).", usage=_u(95, 14, 64)),
    ),
    tools=("get_weather",),
    final_text="Paris is sunny (21C); Rome has rain (17C).",
)

PARALLEL = Scenario(
    name="parallel",
    prompt="Weather in Paris, and what is 2 + 40?",
    turns=(
        Turn(
            calls=(
                Call("call_w", "get_weather", '{"city": "Paris"}'),
                Call("call_a", "add", '{"a": 2, "b": 40}'),
                Call("call_r", "get_weather", '{"city": "Rome"}'),
            ),
            usage=_u(50, 30),
        ),
        Turn(text="Paris: sunny, 21C. Rome: rain. 2 + 40 = 42.", usage=_u(110, 16)),
    ),
    tools=("get_weather", "add"),
    final_text="Paris: sunny, 21C. Rome: rain. 2 + 40 = 42.",
)

REASONING = Scenario(
    name="reasoning",
    prompt="Is 17 prime?",
    turns=(
        Turn(
            reasoning="17 has no divisors between 2 and 4, so it is prime.",
            text="Yes, 17 is prime.",
            usage=_u(15, 25, reasoning=18),
        ),
    ),
    final_text="Yes, 17 is prime.",
)

MALFORMED = Scenario(
    name="malformed",
    prompt="Weather in Paris?",
    turns=(
        Turn(calls=(Call("call_bad", "get_weather", '{"city": "Par'),), usage=_u(30, 7)),
        Turn(calls=(Call("call_list", "get_weather", '["Paris"]'),), usage=_u(60, 6)),
        Turn(calls=(Call("call_good", "get_weather", '{"city": "Paris"}'),), usage=_u(90, 7)),
        Turn(text="It is sunny in Paris, 21C.", usage=_u(120, 9)),
    ),
    tools=("get_weather",),
    final_text="It is sunny in Paris, 21C.",
)

ALL = (PLAIN, MULTI_STEP, PARALLEL, REASONING, MALFORMED)
