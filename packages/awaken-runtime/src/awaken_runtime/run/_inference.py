"""Inference for one step: the request as plugins shaped it, and the streamed response.

``request`` assembles what the model sees from the transcript, the context
policy and the request-only state plugins wrote (context entries, tool
filters, a narrowed window, parameter overrides); ``infer`` streams it,
turning deltas into events and failures into typed ``ProviderFailure`` ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._lazy import LazyModule
from ..lifecycle._failures import Cancelled, ProviderFailure
from ..messages._message import Message, ToolCall
from ..messages._transcript import KeepAll
from ..messages._unicode import scrub, scrub_text
from ..models._model import InferenceParams, InferenceRequest, InferenceResponse, StreamDelta
from ..plugins._context import (
    CONTEXT_MESSAGES,
    INFERENCE_PARAMS,
    REQUEST_WINDOW,
    STANDING_CONTEXT,
    TOOL_FILTER,
    visible_tools,
)
from ..state._engine import Scope
from ._deps import RunDeps
from ._leg import LegState
from ._provider_failure import filtered, provider_failure
from ._request import CONTEXT_COOLDOWNS, ReplacedContent
from ._signals import End, fail, interrupted

if TYPE_CHECKING:
    from ..lifecycle import _events as events
else:  # runs nobody listens to never load the event classes (see _lazy.py)
    events = LazyModule("awaken_runtime.lifecycle._events")

__all__ = ["Inference"]

_RUN = Scope.RUN
_FILTER_SLOT = (_RUN, TOOL_FILTER)
_CONTEXT_SLOT = (_RUN, CONTEXT_MESSAGES)
_STANDING_SLOT = (_RUN, STANDING_CONTEXT)
_WINDOW_SLOT = (_RUN, REQUEST_WINDOW)
_PARAMS_SLOT = (_RUN, INFERENCE_PARAMS)
_COOLDOWN_SLOT = (_RUN, CONTEXT_COOLDOWNS)


class Inference:
    """Builds each step's request and streams it through the agent's executor."""

    __slots__ = ("deps", "leg")

    def __init__(self, deps: RunDeps, leg: LegState) -> None:
        self.deps = deps
        self.leg = leg

    def base_request(self) -> InferenceRequest:
        """The request as it would be without any context entries or tool filters."""
        deps = self.deps
        leg = self.leg
        transcript, policy = leg.transcript, deps.policy
        if isinstance(policy, KeepAll):  # the whole transcript after the system prompt
            messages: Sequence[Message] = transcript.headed(deps.assembler.head)
        else:
            window = transcript.window(policy)
            messages = deps.assembler.messages(window, transcript.last_user_index, [])
        return InferenceRequest(
            deps.model,
            messages,
            deps.descriptors,
            deps.params,
            deps.run_id,
            leg.step,
            deps.output_spec,
        )

    def _override(self, override: dict[str, Any]) -> InferenceParams:
        params = self.deps.params
        return InferenceParams.model_validate({**params.model_dump(), **override})

    def request(self) -> InferenceRequest:
        """This step's request; also records which tools it made visible."""
        deps = self.deps
        leg = self.leg
        data = leg.engine.data  # plain dict reads: this runs every step
        raw_context = data.get(_CONTEXT_SLOT)
        standing = data.get(_STANDING_SLOT)
        if standing:
            raw_context = deps.assembler.with_standing(standing, raw_context)
        filters = data.get(_FILTER_SLOT)
        override = data.get(_WINDOW_SLOT)
        params = data.get(_PARAMS_SLOT)
        transcript = leg.transcript
        policy = deps.policy
        if override is None and raw_context is None and isinstance(policy, KeepAll):
            # The common case: the whole transcript after the system prompt.
            transcript.decode_from(0)
            messages: Sequence[Message] = transcript.headed(deps.assembler.head)
        else:
            if not isinstance(override, dict):
                override = {}
            entries = (
                deps.assembler.entries(raw_context, leg.step, data.get(_COOLDOWN_SLOT))
                if raw_context
                else []
            )
            after = override.get("start_after_message_id")
            window = transcript.window(policy, after)
            transcript.decode_from(window.start)
            messages = deps.assembler.messages(window, transcript.last_user_index, entries)
            replace = override.get("replace_content")
            if replace and isinstance(replace, dict):
                messages = ReplacedContent(messages, replace)
        if filters:
            tools = deps.tools
            ids = visible_tools(tools, filters)
            leg.visible = set(ids)
            descriptors = [tools[i].descriptor for i in ids]
        else:
            leg.visible = None
            descriptors = deps.descriptors
        return InferenceRequest(
            deps.model,
            messages,
            descriptors,
            self._override(params) if params else deps.params,
            deps.run_id,
            leg.step,
            deps.output_spec,
        )

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Stream ``request``; emit text deltas; return the final response."""
        deps = self.deps
        leg = self.leg
        response: InferenceResponse | None = None
        emit = deps.emit
        model = deps.model
        token = leg.cancel
        observation = leg.observation
        seen = observation.start_inference(request) if observation is not None else None
        token.arm()
        try:
            async for item in deps.executor.stream(request):
                if isinstance(item, StreamDelta):
                    if emit is not None:
                        emit(
                            events.TextDelta(
                                seq=leg.next_seq(),
                                run_id=deps.run_id,
                                channel=item.channel,
                                delta=scrub_text(item.text),
                            )
                        )
                    if token.cancelled:
                        raise End(Cancelled())
                else:
                    response = item
        except End:
            if seen is not None:
                seen.end(None, asyncio.CancelledError())
            raise
        except asyncio.CancelledError as exc:
            if seen is not None:
                seen.end(None, exc)
            raise interrupted(token) from None
        except Exception as exc:
            if seen is not None:
                seen.end(None, exc)
            raise fail(provider_failure(exc, model)) from exc
        finally:
            token.disarm()
        if response is None:
            why = "the provider's stream ended without a final response"
            if seen is not None:
                seen.end(None, RuntimeError(why))
            raise fail(ProviderFailure(provider=model.provider, model=model.model, message=why))
        leg.finish_reason = finish = response.finish_reason
        leg.answered_by = response.model
        if finish == "content_filter":
            failure = filtered(model)
            if seen is not None:
                seen.end(None, RuntimeError(failure.message))
            raise fail(failure)
        response = _storable(response)
        if seen is not None:
            seen.end(response)
        return response


def _storable(response: InferenceResponse) -> InferenceResponse:
    """``response`` with lone surrogates replaced (no store can encode them)."""
    text, reasoning, calls = response.text, response.reasoning, response.tool_calls
    clean_calls = [_storable_call(c) for c in calls]
    update: dict[str, Any] = {}
    if (clean := scrub_text(text)) is not text:
        update["text"] = clean
    if (clean := scrub_text(reasoning)) is not reasoning:
        update["reasoning"] = clean
    if any(new is not old for new, old in zip(clean_calls, calls, strict=True)):
        update["tool_calls"] = clean_calls
    return response.model_copy(update=update) if update else response


def _storable_call(call: ToolCall) -> ToolCall:
    fields = {"id": call.id, "name": call.name, "arguments": call.arguments}
    if call.parse_error is not None:
        fields["parse_error"] = call.parse_error
    if call.raw_arguments is not None:
        fields["raw_arguments"] = call.raw_arguments
    update = {k: v for k, v in fields.items() if scrub(v) is not v}
    if not update:
        return call
    return call.model_copy(update={k: scrub(v) for k, v in update.items()})
