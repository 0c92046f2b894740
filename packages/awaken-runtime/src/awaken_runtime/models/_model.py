"""Model catalog entries, inference requests/responses and the executor protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .._defaults import new_list
from ..messages._message import Message, ToolCall
from ..tools._tool import ToolDescriptor
from ._errors import ErrorClass
from ._output import OutputSpec

__all__ = [
    "InferenceParams",
    "InferenceRequest",
    "InferenceResponse",
    "LlmExecutor",
    "ModelSpec",
    "Pricing",
    "StreamDelta",
    "TokenUsage",
]


class Pricing(BaseModel):
    """USD prices per one million tokens."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None


class TokenUsage(BaseModel):
    """Token counts of one inference, or summed over a run."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class ModelSpec(BaseModel):
    """A catalog entry: a stable id bound to a provider and an upstream model name."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    id: str
    provider: str
    model: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    modalities: tuple[str, ...] = ("text",)
    knowledge_cutoff: str | None = None
    pricing: Pricing | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    timeout_s: float | None = None
    native_output: bool | None = None
    """Whether the model takes a JSON-schema response format (``None``: the executor
    decides, e.g. from litellm's model table); read when an output's mode is ``auto``."""
    fallbacks: tuple[str, ...] = ()
    """Upstream model names tried in order when this one fails with a class in
    ``fallback_on`` after its retries (same provider, api_base and key)."""
    fallback_on: tuple[ErrorClass, ...] = ("rate_limit", "server", "timeout", "connection")
    """The error classes (see ``ErrorClass``) that move on to the next fallback."""
    extra: dict[str, Any] = Field(default_factory=dict)

    def cost(self, usage: TokenUsage) -> float | None:
        """USD cost of ``usage`` under this spec's pricing, or ``None`` without pricing."""
        if self.pricing is None:
            return None
        p = self.pricing
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        cached_rate = (
            p.cached_input_per_mtok if p.cached_input_per_mtok is not None else p.input_per_mtok
        )
        return (
            (usage.prompt_tokens - cached) * p.input_per_mtok
            + cached * cached_rate
            + usage.completion_tokens * p.output_per_mtok
        ) / 1_000_000


class InferenceParams(BaseModel):
    """Sampling parameters; ``None`` leaves the provider's default."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    temperature: float | None = None
    max_output_tokens: int | None = None
    top_p: float | None = None
    reasoning_effort: str | None = None
    stop: tuple[str, ...] | None = None
    tool_choice: str | None = None
    """``auto``, ``none``, ``required`` or the name of one tool the model must call."""
    parallel_tool_calls: bool | None = None
    """Whether the model may ask for several tool calls in one answer."""
    response_format: dict[str, Any] | None = None
    """A provider response format (OpenAI's shape, e.g. ``{"type": "json_object"}``);
    an agent's ``output`` sets its own."""


@dataclass(slots=True)
class InferenceRequest:
    """One model call. ``messages`` is a read-only sequence (often a copy-free view)."""

    model: ModelSpec
    messages: Sequence[Message]
    tools: Sequence[ToolDescriptor]
    params: InferenceParams = field(default_factory=InferenceParams)
    run_id: str = ""
    step: int = 0
    output: OutputSpec | None = None
    """The agent's structured output, which the executor asks the model for."""


class StreamDelta(BaseModel):
    """A piece of streamed output: ``text`` on the ``text`` or ``reasoning`` channel."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    text: str
    channel: Literal["text", "reasoning"] = "text"


class InferenceResponse(BaseModel):
    """The complete answer of one inference."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=new_list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    finish_reason: str = "stop"
    cost: float | None = None
    """USD cost as the provider priced it (``None``: unknown); used when the spec has no pricing."""
    model: str | None = None
    """The upstream model that answered when it was not the spec's own (a fallback)."""
    response_id: str | None = None
    """The provider's id of this completion (OpenAI's ``chatcmpl-...``), if it sent one."""
    response_model: str | None = None
    """The model that answered, as the provider names it (may differ from the request's)."""


@runtime_checkable
class LlmExecutor(Protocol):
    """A model provider.

    ``stream`` yields :class:`StreamDelta` values as output arrives and then
    exactly one :class:`InferenceResponse` as its last item.
    """

    def stream(self, request: InferenceRequest) -> AsyncIterator[StreamDelta | InferenceResponse]:
        """Run one inference."""
        ...
