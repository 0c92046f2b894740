"""``ScriptedExecutor``: canned model turns for tests and the offline demo."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from ._errors import AwakenError
from ._messages import ToolCall, new_id
from ._models import InferenceRequest, InferenceResponse, StreamDelta, TokenUsage

__all__ = ["ScriptExhausted", "ScriptedExecutor", "ScriptedTurn", "TurnSource"]


class ScriptExhausted(AwakenError):
    """The scripted model was asked for more turns than it has."""


class ScriptedTurn(BaseModel):
    """One canned model answer."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage | None = None

    @classmethod
    def call(
        cls, name: str, arguments: dict[str, Any] | None = None, *, text: str = ""
    ) -> ScriptedTurn:
        """A turn that calls one tool (with a fresh call id)."""
        return cls(
            text=text,
            tool_calls=[ToolCall(id=new_id("call_"), name=name, arguments=arguments or {})],
        )


TurnSource: TypeAlias = ScriptedTurn | str | Callable[[InferenceRequest], "ScriptedTurn | str"]
"""One scripted turn: a turn, a plain text answer, or a function of the request."""


def _split_chunks(text: str, size: int) -> Iterable[str]:
    if size <= 0 or len(text) <= size:
        if text:
            yield text
        return
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _response(turn: ScriptedTurn) -> InferenceResponse:
    usage = turn.usage
    if usage is None:
        usage = TokenUsage(prompt_tokens=10, completion_tokens=max(1, len(turn.text) // 4))
    return InferenceResponse(
        text=turn.text,
        reasoning=turn.reasoning,
        tool_calls=list(turn.tool_calls),
        usage=usage,
        finish_reason="tool_calls" if turn.tool_calls else "stop",
    )


class ScriptedExecutor:
    """An :class:`LlmExecutor` that replays turns in order.

    Each turn is a :class:`ScriptedTurn`, a string (a plain text answer), or a
    function of the request returning either, so a test can react to what the
    model would see. Text is streamed in ``chunk_size`` pieces. Usage defaults
    to a rough count (4 characters per token) so cost paths are exercised.
    With ``repeat=True`` the script loops forever instead of running out.
    """

    def __init__(
        self,
        turns: Sequence[TurnSource],
        *,
        chunk_size: int = 0,
        repeat: bool = False,
    ) -> None:
        self.turns = list(turns)
        self.chunk_size = chunk_size
        self.repeat = repeat
        self.requests: list[InferenceRequest] = []
        self.record_requests = True
        self._next = 0
        # Fixed turns become responses here, once; only callables run per request.
        self._responses: dict[int, InferenceResponse] = {
            id(turn): _response(turn) for turn in self.turns if isinstance(turn, ScriptedTurn)
        }

    @property
    def calls(self) -> int:
        """How many inferences were served."""
        return self._next

    _fixed = False  # whether the last turn taken came straight from the script

    def _take(self, request: InferenceRequest) -> ScriptedTurn:
        if self._next >= len(self.turns) and (not self.repeat or not self.turns):
            raise ScriptExhausted(
                f"scripted model has {len(self.turns)} turns and was asked for turn "
                f"{self._next + 1}; add turns or pass repeat=True"
            )
        cycle, index = divmod(self._next, len(self.turns))
        source = self.turns[index]
        self._next += 1
        self._fixed = isinstance(source, ScriptedTurn) and not (cycle and source.tool_calls)
        if callable(source) and not isinstance(source, ScriptedTurn):
            source = source(request)
        if isinstance(source, str):
            return ScriptedTurn(text=source)
        if cycle and source.tool_calls:
            # A repeated turn gets fresh call ids: ids must be unique within a thread.
            calls = [c.model_copy(update={"id": new_id("call_")}) for c in source.tool_calls]
            return source.model_copy(update={"tool_calls": calls})
        return source

    async def stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[StreamDelta | InferenceResponse]:
        """Stream the next canned turn."""
        if self.record_requests:
            self.requests.append(request)
        turn = self._take(request)
        if turn.reasoning:
            for chunk in _split_chunks(turn.reasoning, self.chunk_size):
                yield StreamDelta(text=chunk, channel="reasoning")
        if turn.text:
            for chunk in _split_chunks(turn.text, self.chunk_size):
                yield StreamDelta(text=chunk)
        fixed = self._fixed
        response = self._responses.get(id(turn)) if fixed else None
        if response is None:
            response = _response(turn)
            if fixed:
                self._responses[id(turn)] = response
        yield response
