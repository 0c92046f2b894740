"""Assembling litellm's streamed chunks into deltas and one ``InferenceResponse``.

Chunks follow OpenAI's ``chat.completion.chunk`` shape (litellm normalizes
every provider to it): ``choices[].delta`` carries ``content``,
``reasoning_content`` and ``tool_calls`` fragments (``index``, ``id``,
``function.name``, ``function.arguments`` pieces); the last chunk may carry
``usage``. Objects or plain dicts are both accepted.

:attr:`StreamAssembler.ended` tells when nothing more can come: a chunk
carrying only usage (``choices: []``) after a finish reason, which litellm
sends last when the request asked for ``stream_options.include_usage``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ...messages._message import ToolCall, _parse_arguments
from .._model import InferenceResponse, StreamDelta, TokenUsage

__all__ = ["StreamAssembler"]


class StreamAssembler:
    """Feed chunks in order; :meth:`response` builds the final answer."""

    __slots__ = ("_calls", "_finish", "_id", "_model", "_reasoning", "_text", "_usage", "ended")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._usage: Any = None
        self._finish: str | None = None
        self._id: str | None = None
        self._model: str | None = None
        self.ended = False
        """A usage-only chunk came after a finish reason: the answer is complete."""

    def feed(self, chunk: Any) -> list[StreamDelta]:
        """Take one chunk; return the deltas to stream now."""
        out: list[StreamDelta] = []
        usage = _get(chunk, "usage")
        choices = _get(chunk, "choices") or ()
        if usage:
            self._usage = usage
            self.ended = self._finish is not None and not choices
        if self._id is None:  # every chunk repeats them: the first one that has them tells
            self._id, self._model = _text(_get(chunk, "id")), _text(_get(chunk, "model"))
        for choice in choices:
            self._finish = _get(choice, "finish_reason") or self._finish
            delta = _get(choice, "delta")
            if delta is None:
                continue
            piece = _get(delta, "reasoning_content")
            if piece:
                self._reasoning.append(piece)
                out.append(StreamDelta(text=piece, channel="reasoning"))
            piece = _get(delta, "content")
            if piece:
                self._text.append(piece)
                out.append(StreamDelta(text=piece))
            for fragment in _get(delta, "tool_calls") or ():
                _merge_fragment(self._calls, fragment)
        return out

    def response(self) -> InferenceResponse:
        """The complete answer: text, reasoning, parsed tool calls, usage, finish reason."""
        calls = [_finish_call(self._calls[i]) for i in sorted(self._calls)]
        return InferenceResponse(
            text="".join(self._text),
            reasoning="".join(self._reasoning),
            tool_calls=calls,
            usage=_usage(self._usage),
            finish_reason=self._finish or ("tool_calls" if calls else "stop"),
            response_id=self._id,
            response_model=self._model,
        )


class _Call:
    """A tool call being assembled from streamed fragments."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _usage(raw: Any) -> TokenUsage:
    prompt = _get(raw, "prompt_tokens") or 0
    completion = _get(raw, "completion_tokens") or 0
    cached = _get(_get(raw, "prompt_tokens_details"), "cached_tokens")
    if not cached:
        cached = _get(raw, "cache_read_input_tokens")  # Anthropic's name
    reasoning = _get(_get(raw, "completion_tokens_details"), "reasoning_tokens")
    return TokenUsage(
        prompt_tokens=int(prompt),
        completion_tokens=int(completion),
        cached_tokens=int(cached or 0),
        reasoning_tokens=int(reasoning or 0),
    )


def _merge_fragment(calls: dict[int, _Call], fragment: Any) -> None:
    index = _get(fragment, "index")
    call_id = _get(fragment, "id")
    if call_id is not None and not isinstance(call_id, str):
        call_id = str(call_id)  # some servers number their calls
    function = _get(fragment, "function")
    name = _get(function, "name")
    if not isinstance(index, int) or isinstance(index, bool):
        # Some providers omit the index: a new id starts a new call, else continue the last.
        # A known id can start a new call too: servers that send one id for every call.
        arguments = _get(function, "arguments")
        known = [
            i
            for i, c in calls.items()
            if call_id and c.id == call_id and not _starts_new_call(c, name, arguments)
        ]
        if known:
            index = known[-1]
        elif call_id or not calls:
            index = max(calls, default=-1) + 1
        else:
            index = max(calls)
    call = calls.get(index)
    if call is None:
        call = calls[index] = _Call()
    if call_id and not call.id:
        call.id = call_id
    if name and not call.name:
        call.name = name
    arguments = _get(function, "arguments")
    if arguments:
        call.arguments.append(arguments)


def _starts_new_call(call: _Call, name: Any, arguments: Any) -> bool:
    """A fragment naming a tool with arguments, after a finished call of the same id."""
    if not (name and call.name and arguments and call.arguments):
        return False  # a repeated id (and name) on a continuation fragment
    try:
        json.loads("".join(call.arguments))
    except ValueError:
        return False  # the earlier call's arguments are still incomplete
    return True


def _finish_call(call: _Call) -> ToolCall:
    raw = "".join(call.arguments)
    arguments, error = _parse_arguments(raw)
    return ToolCall(
        id=call.id or f"call_{os.urandom(8).hex()}",
        name=call.name,
        arguments=arguments,
        parse_error=error,
        raw_arguments=raw if error is not None else None,
    )
