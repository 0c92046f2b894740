"""``ScriptedExecutor``: canned model turns for tests and the offline demo."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from .._defaults import new_list
from .._errors import AwakenError
from ..messages._message import ToolCall, new_id
from ._model import InferenceRequest, InferenceResponse, StreamDelta, TokenUsage

__all__ = ["ScriptExhausted", "ScriptedExecutor", "ScriptedTurn"]


class ScriptExhausted(AwakenError):
    """The scripted model was asked for more turns than it has."""


class ScriptedTurn(BaseModel):
    """One canned model answer."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=new_list)
    usage: TokenUsage | None = None
    finish_reason: str | None = None
    """The provider's finish reason to report (default: ``tool_calls`` or ``stop``)."""

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
        finish_reason=turn.finish_reason or ("tool_calls" if turn.tool_calls else "stop"),
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
        # A ScriptedTurn of the script becomes its response once, here (keyed by id,
        # holding the turn so a recycled id is never mistaken); other sources run per
        # request, and turns added to ``turns`` later are converted on first use.
        self._responses: dict[int, tuple[ScriptedTurn, InferenceResponse]] = {
            id(turn): (turn, _response(turn))
            for turn in self.turns
            if isinstance(turn, ScriptedTurn)
        }

    @property
    def calls(self) -> int:
        """How many inferences were served."""
        return self._next

    def _take(self, request: InferenceRequest) -> tuple[ScriptedTurn, bool]:
        """The next turn, and whether it is a turn of the script itself (cacheable)."""
        turns = self.turns
        n = self._next
        if n < len(turns):
            cycle, source = 0, turns[n]
        elif self.repeat and turns:
            cycle, index = divmod(n, len(turns))
            source = turns[index]
        else:
            raise ScriptExhausted(
                f"scripted model has {len(turns)} turns and was asked for turn "
                f"{n + 1}; add turns or pass repeat=True"
            )
        self._next = n + 1
        fixed = isinstance(source, ScriptedTurn)
        produced = source if fixed or not callable(source) else source(request)
        if isinstance(produced, ScriptedTurn):
            turn = produced
        elif isinstance(produced, str):
            turn = ScriptedTurn(text=produced)
        else:
            raise TypeError(
                f"scripted turn {n + 1} produced {type(produced).__name__}; a turn "
                f"function must return a ScriptedTurn or a str"
            )
        if cycle and turn.tool_calls:
            # A repeated turn gets fresh call ids: ids must be unique within a thread.
            calls = [c.model_copy(update={"id": new_id("call_")}) for c in turn.tool_calls]
            return turn.model_copy(update={"tool_calls": calls}), False
        return turn, fixed

    async def stream(
        self, request: InferenceRequest
    ) -> AsyncIterator[StreamDelta | InferenceResponse]:
        """Stream the next canned turn."""
        if self.record_requests:
            self.requests.append(request)
        turn, fixed = self._take(request)
        if turn.reasoning:
            for chunk in _split_chunks(turn.reasoning, self.chunk_size):
                yield StreamDelta(text=chunk, channel="reasoning")
        if turn.text:
            for chunk in _split_chunks(turn.text, self.chunk_size):
                yield StreamDelta(text=chunk)
        if not fixed:
            yield _response(turn)
            return
        cached = self._responses.get(id(turn))
        if cached is None or cached[0] is not turn:
            cached = self._responses[id(turn)] = (turn, _response(turn))
        yield cached[1]
